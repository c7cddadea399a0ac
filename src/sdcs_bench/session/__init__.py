"""One live session of one trial: the runner, the cleave controller (watcher, integrity check),
redaction of secrets and the record of repository-written memory."""
