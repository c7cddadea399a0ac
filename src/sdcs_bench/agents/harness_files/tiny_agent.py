"""A minimal tool-calling coding agent (stdlib only): the worked example for the generic
``command`` adapter, and the agent the project's own tests drive through every layer.

    python tiny_agent.py --endpoint URL --model M PROMPT      (key in OPENAI_API_KEY)

It speaks OpenAI Chat Completions to ``URL/v1/chat/completions`` and offers two tools,
``write_file(path, content)`` and ``run_shell(command)``, executed one after another in the
current directory. It prints every model reply as one JSON line and stops at a reply with no
tool calls (or after --max-turns).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

TOOLS = [
    {"type": "function", "function": {
        "name": "write_file", "description": "Write a file (path relative to the repository root).",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                       "required": ["path", "content"]}}},
    {"type": "function", "function": {
        "name": "run_shell", "description": "Run a shell command in the repository root.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
]


def call_model(endpoint: str, key: str, body: dict) -> dict:
    req = urllib.request.Request(
        endpoint.rstrip("/") + "/v1/chat/completions", data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
    )
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.load(resp)


def run_tool(name: str, args: dict) -> str:
    if name == "write_file":
        os.makedirs(os.path.dirname(args["path"]) or ".", exist_ok=True)
        with open(args["path"], "w") as fh:
            fh.write(args["content"])
        return f"wrote {args['path']}"
    if name == "run_shell":
        proc = subprocess.run(args["command"], shell=True, capture_output=True, text=True)
        return f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return f"unknown tool {name}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--max-turns", type=int, default=50)
    ap.add_argument("prompt")
    opts = ap.parse_args(argv)
    key = os.environ.get("OPENAI_API_KEY", "")
    messages = [{"role": "system", "content": "You are a coding agent working in a git repository."}]
    if os.path.isfile("AGENTS.md"):
        with open("AGENTS.md") as fh:
            messages.append({"role": "system", "content": fh.read()})
    messages.append({"role": "user", "content": opts.prompt})
    for _ in range(opts.max_turns):
        try:
            reply = call_model(opts.endpoint, key, {"model": opts.model, "messages": messages, "tools": TOOLS})
        except urllib.error.HTTPError as exc:
            print(json.dumps({"error": exc.code, "body": exc.read().decode(errors="replace")}), flush=True)
            return 1
        print(json.dumps(reply), flush=True)
        message = reply["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            return 0
        for call in calls:
            result = run_tool(call["function"]["name"], json.loads(call["function"]["arguments"] or "{}"))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
