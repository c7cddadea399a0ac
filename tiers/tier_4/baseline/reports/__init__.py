"""Utilisation and revenue reports."""

from reports.revenue import revenue_by_code
from reports.utilisation import booked_minutes

__all__ = ["booked_minutes", "revenue_by_code"]
