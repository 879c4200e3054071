package vcsimlab

import (
	"time"
)

// Options configures a Lab. Zero values mean the defaults.
type Options struct {
	Hosts    int    // hosts in the single cluster; default 3
	VMs      int    // "modern" VMs hpc-node-N; default 2 (0 means the default)
	Listen   string // default "127.0.0.1:0"
	Username string // default "administrator@vsphere.local"
	Password string // default: a random string
	// HostsNeedReboot starts every host without
	// capability.deviceRebindWithoutRebootSupported: passthrough and SR-IOV
	// changes stay pending until RebootHost.
	HostsNeedReboot bool
	// NewerGPUHost makes the cluster's last host one of a newer GPU
	// generation: two NVIDIA H200 at 0000:19:00.0 and 0000:9b:00.0 instead
	// of the other hosts' GPUs (see hardware.go's newerGPUs). It needs at
	// least two hosts.
	NewerGPUHost bool
	// DGXHosts are hosts, by index in HostNames order, built as an NVIDIA
	// DGX H100 (topology.go): eight H100 at 0000:19:00.0, 0000:41:00.0, …
	// instead of the lab's GPUs, each under one PCIe switch with its
	// ConnectX-7 compute card (0000:18:00.0, 0000:40:00.0, …), on two NUMA
	// nodes; the other lab NICs stay. Not the last host with NewerGPUHost.
	DGXHosts []int
	// HostVersions gives hosts, by index in HostNames order, another ESXi
	// version than 8.0.3, e.g. {2: "7.0.3"}: a release vCenter 8.0.3
	// manages, 7.0.0 to 8.0.3 (see dvs_compat.go).
	HostVersions map[int]string
	// Latency is added to every request but the lab's own SOAP calls, on
	// every endpoint, as the round trip to a real vCenter costs 10-50 ms
	// where the lab answers in 1-2 ms.
	// Benchmarks use it; tests count calls instead.
	Latency time.Duration
	// RebootTime is how long a host rebooted through RebootHost_Task stays
	// notResponding; default 300ms (a real host takes minutes).
	RebootTime time.Duration
}
