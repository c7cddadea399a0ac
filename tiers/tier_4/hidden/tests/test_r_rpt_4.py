# SPECSNAP-CANARY tier_4 8b30c6db-bf83-4271-993b-07ff1d25b4c9
from datetime import date

from billing.charges import Charge


def test_header_only_when_there_are_no_charges():
    from reports.export import charges_csv

    assert charges_csv([]) == "date,patient_id,code,description,amount\n"


def test_rows_sorted_by_date_patient_and_code():
    from reports.export import charges_csv

    charges = [
        Charge("P2", "C100", 6_500, date(2024, 5, 6)),
        Charge("P1", "V300", 2_800, date(2024, 5, 6)),
        Charge("P1", "C120", 4_000, date(2024, 5, 6)),
        Charge("P9", "D400", 900, date(2024, 5, 1)),
    ]
    assert charges_csv(charges).splitlines()[1:] == [
        "2024-05-01,P9,D400,Dispensing fee,9.00",
        "2024-05-06,P1,C120,Follow-up visit,40.00",
        "2024-05-06,P1,V300,Vaccination,28.00",
        "2024-05-06,P2,C100,Standard consultation,65.00",
    ]


def test_amounts_have_two_decimals_and_unknown_codes_have_no_description():
    from reports.export import charges_csv

    text = charges_csv([Charge("P1", "AMX500", 5, date(2024, 5, 6)), Charge("P1", "L500", 1_255, date(2024, 5, 6))])
    assert text.splitlines()[1:] == ["2024-05-06,P1,AMX500,,0.05", "2024-05-06,P1,L500,Venepuncture,12.55"]


def test_fields_with_commas_are_quoted():
    from reports.export import charges_csv

    text = charges_csv([Charge("Moss, Ada", "C100", 6_500, date(2024, 5, 6))])
    assert text.splitlines()[1] == '2024-05-06,"Moss, Ada",C100,Standard consultation,65.00'


def test_every_line_ends_with_newline():
    from reports.export import charges_csv

    text = charges_csv([Charge("P1", "C100", 6_500, date(2024, 5, 6)), Charge("P2", "C100", 0, date(2024, 5, 6))])
    assert text.endswith("65.00\n2024-05-06,P2,C100,Standard consultation,0.00\n")
    assert "\r" not in text
