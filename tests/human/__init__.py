"""Tests of ieqa.human and the `ieqa mos` command."""
