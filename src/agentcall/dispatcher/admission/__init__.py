"""Admission of call.execute: decode, decide in one transaction, settle after the commit."""
