"""The test suite, by feature: soul/, flock/, bodies/, llm/, firmware/ (what a folder's tests share:
plain helpers in its helpers.py, fixtures in its conftest.py), the cross-cutting tests here at the
top, fakes/ and web/ beside them. tests/helpers.py holds what every feature's tests share (ROOT,
the one poll-until). No test module imports another."""
