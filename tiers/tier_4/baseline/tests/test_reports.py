from datetime import date, datetime, time

from billing.charges import Charge
from reports.revenue import daily_totals, revenue_by_code
from reports.utilisation import booked_minutes, rostered_minutes
from scheduling.appointments import Appointment
from staff.rota import Shift


def test_booked_and_rostered_minutes():
    appts = [
        Appointment("A1", "P1", "S1", datetime(2024, 5, 6, 9, 0), 30),
        Appointment("A2", "P2", "S1", datetime(2024, 5, 6, 10, 0), 20, status="cancelled"),
    ]
    assert booked_minutes(appts, "S1", date(2024, 5, 6)) == 30
    assert rostered_minutes([Shift("S1", date(2024, 5, 6), time(9), time(13))], "S1", date(2024, 5, 6)) == 240


def test_revenue_summaries():
    charges = [Charge("P1", "C100", 6_500, date(2024, 5, 6)), Charge("P2", "C100", 6_500, date(2024, 5, 5))]
    assert revenue_by_code(charges) == {"C100": 13_000}
    assert daily_totals(charges)[0] == (date(2024, 5, 5), 6_500)
