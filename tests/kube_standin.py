"""A stand-in for a Kubernetes cluster, on 127.0.0.1, for the executor plugin's calls: the API
records every Job and Secret it is sent and, when given a docker client, runs each Job's pod
container for real (a minimal kubelet: the container's image, command, arguments, environment
from the Secret, an empty /workdir, privileged if asked), reporting it active, then succeeded or
failed by its exit status."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Cluster:
    def __init__(self, docker_client=None, network_mode: str = "host") -> None:
        self.docker = docker_client
        self.network_mode = network_mode
        self.jobs: list[dict] = []
        self.secrets: dict[str, dict[str, str]] = {}
        self.state: dict[str, str] = {}
        self.logs: dict[str, str] = {}
        cluster = self

        class Handler(BaseHTTPRequestHandler):
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
                if self.path.endswith("/secrets"):
                    cluster.secrets[body["metadata"]["name"]] = {
                        k: base64.b64decode(v).decode() for k, v in (body.get("data") or {}).items()}
                elif self.path.endswith("/jobs"):
                    cluster.submit(body)
                self._reply(body, 201)

            def do_GET(self):
                if "/jobs/" in self.path:
                    name = self.path.split("/jobs/")[1].split("/")[0]
                    state = cluster.state.get(name, "active")
                    self._reply({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                                 "status": {state: 1}})
                else:
                    self._reply({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []})

            def do_DELETE(self):
                self._reply({"kind": "Status", "status": "Success"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def kubeconfig(self) -> str:
        return json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "stand-in",
            "clusters": [{"name": "stand-in", "cluster": {"server": self.url}}],
            "contexts": [{"name": "stand-in", "context": {"cluster": "stand-in", "user": "u"}}],
            "users": [{"name": "u", "user": {"token": "stand-in"}}],
        })

    def submit(self, job: dict) -> None:
        self.jobs.append(job)
        name = job["metadata"]["name"]
        self.state[name] = "active"
        if self.docker is not None:
            threading.Thread(target=self._run_pod, args=(job,), daemon=True).start()

    def _run_pod(self, job: dict) -> None:
        name = job["metadata"]["name"]
        (container,) = job["spec"]["template"]["spec"]["containers"]
        env = {}
        for var in container.get("env") or []:
            ref = (var.get("valueFrom") or {}).get("secretKeyRef")
            env[var["name"]] = self.secrets[ref["name"]][ref["key"]] if ref else var.get("value", "")
        privileged = bool((container.get("securityContext") or {}).get("privileged"))
        try:
            run = self.docker.containers.run(
                container["image"], entrypoint=container["command"], command=container["args"], environment=env,
                working_dir=container.get("workingDir", "/workdir"), tmpfs={"/workdir": "exec"},
                network_mode=self.network_mode, privileged=privileged, detach=True,
                labels={"org.specsnap.test": "kube-standin"})
            code = run.wait()["StatusCode"]
            self.logs[name] = run.logs().decode(errors="replace")
            run.remove(force=True)
        except Exception as exc:  # the image missing, the engine gone: the pod failed
            code, self.logs[name] = 1, f"{type(exc).__name__}: {exc}"
        self.state[name] = "succeeded" if code == 0 else "failed"

    def close(self) -> None:
        self.server.shutdown()
