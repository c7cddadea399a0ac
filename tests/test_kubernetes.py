"""The Kubernetes profile, as far as it can be checked without a cluster: its storage half runs a
study for real with no shared file system (every input fetched from and every output sent to an
S3 server on 127.0.0.1), and its executor half submits the Job specs we expect to a stand-in
Kubernetes API on 127.0.0.1 that records them (no pod ever runs)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT

pytest.importorskip("snakemake_executor_plugin_kubernetes")
pytest.importorskip("snakemake_storage_plugin_s3")
moto_server = pytest.importorskip("moto.server")

BUCKET = "specsnap-results"
ONE_TRIAL = 'overrides=["agent=[ref_oracle]","arm=[Vanilla]","variant=[none]"]'
PROFILE = ROOT / "workflow" / "profiles" / "kubernetes"


@pytest.fixture(scope="module")
def s3():
    """An S3 server (moto) on 127.0.0.1 with the profile's bucket; the storage plugin's settings."""
    import logging

    import boto3

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"SNAKEMAKE_STORAGE_S3_ENDPOINT_URL": f"http://{host}:{port}", "SNAKEMAKE_STORAGE_S3_ACCESS_KEY": "test",
           "SNAKEMAKE_STORAGE_S3_SECRET_KEY": "test"}
    client = boto3.client("s3", endpoint_url=env["SNAKEMAKE_STORAGE_S3_ENDPOINT_URL"], aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    yield env, client
    server.stop()


def _snakemake(workdir: Path, env: dict, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), *args,
            "--config", ONE_TRIAL]


class _KubeAPI(BaseHTTPRequestHandler):
    """Just enough of the Kubernetes API for the executor plugin: it records every Job created and
    reports it as running, forever."""

    jobs: list[dict] = []

    def log_message(self, *args):
        pass

    def _reply(self, body: dict, code: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/jobs"):
            type(self).jobs.append(body)
        self._reply(body, 201)

    def do_GET(self):
        if "/jobs/" in self.path:
            name = self.path.split("/jobs/")[1].split("/")[0]
            self._reply({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                         "status": {"active": 1}})
        else:  # pods of a job: none scheduled yet
            self._reply({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []})

    def do_DELETE(self):
        self._reply({"kind": "Status", "status": "Success"})


def test_the_profile_plans_every_stage_with_its_inputs_in_storage(s3, tmp_path):
    env, _ = s3
    dry = subprocess.run(_snakemake(tmp_path, env, "--profile", str(PROFILE), "-n"), capture_output=True, text=True,
                         env={**os.environ, **env})
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    out = dry.stdout + dry.stderr
    stats = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
             if len(line.split()) == 2 and line.split()[1].isdigit() and not line.split()[0].endswith(":")}
    assert stats == {"publish_plan": 2, "scaffold": 1, "session": 2, "score": 1, "aggregate": 1, "all": 1, "total": 8}
    assert f"s3://{BUCKET}/results/" in out


@pytest.mark.pipeline
def test_a_study_with_no_shared_file_system_equals_the_local_run(s3, tmp_path):
    env, client = s3
    remote = subprocess.run(_snakemake(tmp_path / "remote", env, "--cores", "2", "--default-storage-provider", "s3",
                                       "--default-storage-prefix", f"s3://{BUCKET}/no-shared-fs"),
                            capture_output=True, text=True, env={**os.environ, **env})
    assert remote.returncode == 0, remote.stdout[-3000:] + remote.stderr[-3000:]
    local_results = tmp_path / "remote" / "results"
    assert not list(local_results.rglob("stage.json")), "stage outputs stay in the storage, not on this disk"
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="no-shared-fs/")["Contents"]]
    (board_key,) = [k for k in keys if k.endswith("/leaderboard.csv")]
    assert any(k.endswith("/score/scorecard.json") for k in keys)
    stored = pd.read_csv(io.BytesIO(client.get_object(Bucket=BUCKET, Key=board_key)["Body"].read()))

    here = subprocess.run(_snakemake(tmp_path / "local", env, "--cores", "2"), capture_output=True, text=True)
    assert here.returncode == 0, here.stderr[-3000:]
    (local_board,) = (tmp_path / "local" / "results").glob("*/leaderboard.csv")
    pd.testing.assert_frame_equal(stored, pd.read_csv(local_board))
    assert stored["net"].iloc[0] == stored["expected_net"].iloc[0] > 0


@pytest.mark.pipeline
def test_the_job_specs_submitted_to_kubernetes(s3, tmp_path):
    """Through the profile, against the stand-in API: one Job per stage that is ready, in the job
    image, running this workflow's own job command with the storage settings, and the resources
    asked for; no credential in the spec itself."""
    env, _ = s3
    _KubeAPI.jobs = []
    api = ThreadingHTTPServer(("127.0.0.1", 0), _KubeAPI)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "stand-in",
        "clusters": [{"name": "stand-in", "cluster": {"server": f"http://127.0.0.1:{api.server_address[1]}"}}],
        "contexts": [{"name": "stand-in", "context": {"cluster": "stand-in", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
    }))
    proc = subprocess.Popen(_snakemake(tmp_path, env, "--profile", str(PROFILE), "--default-storage-prefix",
                                       f"s3://{BUCKET}/k8s"),
                            env={**os.environ, **env, "KUBECONFIG": str(kubeconfig)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not _KubeAPI.jobs and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Snakemake cancels its Jobs (DELETE) and exits
        out = proc.communicate(timeout=120)[0]
        api.shutdown()
    assert _KubeAPI.jobs, out[-3000:]
    (job,) = _KubeAPI.jobs  # only the scaffold is ready: everything else waits for it
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "specsnap/job:latest"
    command = " ".join(container["args"])
    assert "python -m snakemake" in command and "--target-jobs 'scaffold:trial=" in command
    assert "--default-storage-provider 's3'" in command and f"--default-storage-prefix 's3://{BUCKET}/k8s'" in command
    assert "--shared-fs-usage 'none'" in command
    assert container["resources"]["requests"]["memory"] == "4000M"
    assert "test" not in json.dumps(container.get("env") or []), "the S3 credentials are passed as a secret reference"
