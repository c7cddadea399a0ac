"""Clinicians, shift rotas and leave."""

from staff.clinicians import ROLES, Clinician, StaffDirectory
from staff.rota import Shift

__all__ = ["ROLES", "Clinician", "Shift", "StaffDirectory"]
