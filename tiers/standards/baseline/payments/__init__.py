"""Ledgerline payments: event handlers, their rates and errors."""
