// Package acctest holds what the test packages share: a simulated lab per
// test, the provider blocks that reach it, the terraform binary under test,
// and the matchers and waits of their checks. It is imported by tests only.
// It imports neither the provider nor the service layer, so that both
// packages' own tests can use it; the provider's test helpers (its provider
// factories, its configurations, a service-layer client of the lab) stay in
// its package.
package acctest
