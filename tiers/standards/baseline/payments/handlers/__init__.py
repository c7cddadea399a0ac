"""One module per event type, each with one handler function: payload (dict) in, response (dict) out."""
