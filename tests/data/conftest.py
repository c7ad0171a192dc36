"""tests/data holds projects the tests build, not tests: other projects' own test files
(upstream/*/tests/*_test.py) run only where a test installs what they need."""

collect_ignore = ["upstream"]
