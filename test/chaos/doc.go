// Package chaos is the fault-injection harness of `make chaos` (and of the
// short version inside `make test`): TestChaos runs capture and two ingest
// processes over a long multi-table workload while a nemesis, from a seed
// it prints, injects faults one after another — process kills and
// SIGTERMs, broker restarts and freezes, object-store and catalog restarts,
// failed and half-failed catalog commits, a source restart, a binlog purge
// that forces a re-snapshot, network latency, bandwidth limits and cuts
// between each binary and each service, and a registry restart that loses
// its schemas — and then checks, with the validators of test/validate,
// that nothing was lost, duplicated or changed on the topics and in the
// lake. The network and catalog faults come from test/faults.
package chaos
