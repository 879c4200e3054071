// Package acctest holds what the test packages share: a simulated lab per
// test, a service-layer client of it, the provider blocks that reach it, the
// terraform binary under test, and the matchers and waits of their checks.
// It is imported by tests only; the provider's own test helpers (its
// provider factories, its configurations) stay in its package, which this
// one cannot import.
package acctest
