"""Management reports built on billing, inventory and the ledger."""

from reports.aging import BUCKETS, aging_buckets
from reports.export import to_csv
from reports.sales import revenue_by_customer, units_and_revenue

__all__ = ["BUCKETS", "aging_buckets", "revenue_by_customer", "to_csv", "units_and_revenue"]
