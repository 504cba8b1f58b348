"""The test suite, by feature: soul/, flock/, bodies/, llm/, firmware/ (each with the conftest.py and
helpers.py its tests share), cross-cutting tests here at the top, fakes/ and web/ beside them.
Helpers live in helpers modules, never in a test module: no test module imports another."""
