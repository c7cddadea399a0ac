"""Reports over payslips.

Placeholder: nothing is implemented here yet.
"""

from __future__ import annotations

__all__: list[str] = []
