# The security suites share the CLI suites' setup (a data directory per
# test, teardown that ends what the test started).
load ../cli/helper
