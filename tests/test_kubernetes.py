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
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT
from kube_standin import Cluster

pytest.importorskip("snakemake_executor_plugin_kubernetes")
pytest.importorskip("snakemake_storage_plugin_s3")
moto_server = pytest.importorskip("moto.server")

BUCKET = "specsnap-results"
ACCESS_KEY, SECRET_KEY = "AKIASPECSNAPSTANDIN1", "specsnap-stand-in-secret-8d1f"
ONE_TRIAL = 'overrides=["agent=[ref_oracle]","arm=[Vanilla]","variant=[none]","seed=[0]"]'
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
    env = {"SNAKEMAKE_STORAGE_S3_ENDPOINT_URL": f"http://{host}:{port}", "SNAKEMAKE_STORAGE_S3_ACCESS_KEY": ACCESS_KEY,
           "SNAKEMAKE_STORAGE_S3_SECRET_KEY": SECRET_KEY}
    client = boto3.client("s3", endpoint_url=env["SNAKEMAKE_STORAGE_S3_ENDPOINT_URL"], aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    yield env, client
    server.stop()


def _snakemake(workdir: Path, env: dict, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), *args,
            "--config", ONE_TRIAL]


def test_the_profile_plans_every_stage_with_its_inputs_in_storage(s3, tmp_path):
    env, _ = s3
    dry = subprocess.run(_snakemake(tmp_path, env, "--profile", str(PROFILE), "-n"), capture_output=True, text=True,
                         env={**os.environ, **env})
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    out = dry.stdout + dry.stderr
    stats = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
             if len(line.split()) == 2 and line.split()[1].isdigit() and not line.split()[0].endswith(":")}
    # (the cells, the trial, and the statistics settings and price table the aggregate reads)
    assert stats == {"publish_plan": 4, "scaffold": 1, "session": 2, "score": 1, "aggregate": 1, "report": 1, "all": 1, "total": 11}
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
    cluster = Cluster()  # records, runs nothing
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(cluster.kubeconfig())
    proc = subprocess.Popen(_snakemake(tmp_path, env, "--profile", str(PROFILE), "--default-storage-prefix",
                                       f"s3://{BUCKET}/k8s"),
                            env={**os.environ, **env, "KUBECONFIG": str(kubeconfig)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not cluster.jobs and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Snakemake cancels its Jobs (DELETE) and exits
        out = proc.communicate(timeout=120)[0]
        cluster.close()
    assert cluster.jobs, out[-3000:]
    (job,) = cluster.jobs  # only the scaffold is ready: everything else waits for it
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "specsnap/job:latest"
    command = " ".join(container["args"])
    assert "python -m snakemake" in command and "--target-jobs 'scaffold:trial=" in command
    assert "--default-storage-provider 's3'" in command and f"--default-storage-prefix 's3://{BUCKET}/k8s'" in command
    assert "--shared-fs-usage 'none'" in command
    assert container["resources"]["requests"]["memory"] == "4000M"
    secret_refs = {v["name"]: v["valueFrom"]["secretKeyRef"] for v in container["env"]}
    assert set(secret_refs) >= {"SNAKEMAKE_STORAGE_S3_ACCESS_KEY", "SNAKEMAKE_STORAGE_S3_SECRET_KEY"}
    spec = json.dumps(job)
    assert ACCESS_KEY not in spec and SECRET_KEY not in spec, "credentials reach the pod through a Secret only"


@pytest.fixture(scope="module")
def job_image(docker_engine, tmp_path_factory) -> str:
    """The job image (containers/job), built from this checkout: a minute the first time."""
    from sdcs_bench.sandbox.images import build_image

    return build_image("job", tmp_path_factory.mktemp("images") / "job.json", log=lambda m: None)["tag"]


@pytest.mark.slow  # about 3 minutes (the job image's build included): `pytest -m slow`
@pytest.mark.pipeline
def test_a_study_runs_in_job_image_pods_of_a_stand_in_cluster(s3, clone, tmp_path, docker_engine, job_image):
    """Every job a Kubernetes cluster would run, run for real: each Job the executor submits is
    started as a container of the job image that fetches the workflow's sources and its inputs from S3 and sends its outputs back; the
    leaderboard it leaves in S3 equals a local run's."""
    env, client = s3
    cluster = Cluster(docker_engine)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(cluster.kubeconfig())
    prefix = f"s3://{BUCKET}/stand-in"
    # The pods here are unprivileged containers, where bubblewrap cannot make its namespaces: the
    # agents run under the local backend inside them (the pod is their only isolation).
    run = subprocess.run([sys.executable, "-m", "snakemake", "--profile", str(PROFILE), "--container-image", job_image,
                          "--default-storage-prefix", prefix, "--jobs", "2", "--seconds-between-status-checks", "1",
                          "--config", ONE_TRIAL.replace('"variant=[none]"', '"variant=[none]","sandbox.backend=local"')],
                         cwd=clone, env={**os.environ, **env, "KUBECONFIG": str(kubeconfig)}, capture_output=True,
                         text=True, timeout=900)
    cluster.close()
    if run.returncode != 0:
        logs = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="stand-in/")["Contents"]
                if "/logs/" in o["Key"]]
        stage_logs = "\n".join(f"--- {k}\n" + client.get_object(Bucket=BUCKET, Key=k)["Body"].read().decode()[-1500:]
                               for k in logs)
        pytest.fail((run.stdout + run.stderr)[-2000:] + stage_logs)
    assert len(cluster.jobs) == 5 and set(cluster.state.values()) == {"succeeded"}  # scaffold, 2 sessions, score, aggregate
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="stand-in/")["Contents"]]
    (board_key,) = [k for k in keys if k.endswith("/leaderboard.csv")]
    stored = pd.read_csv(io.BytesIO(client.get_object(Bucket=BUCKET, Key=board_key)["Body"].read()))
    here = subprocess.run(_snakemake(tmp_path / "local", env, "--cores", "2"), capture_output=True, text=True)
    assert here.returncode == 0, here.stderr[-3000:]
    (local_board,) = (tmp_path / "local" / "results").glob("*/leaderboard.csv")
    pd.testing.assert_frame_equal(stored, pd.read_csv(local_board))
