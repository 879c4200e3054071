// Package vcsimlab runs an in-process vCenter simulator (govmomi's vcsim)
// that behaves like real vSphere for every call the provider makes. Every
// acceptance test starts its own Lab, so tests can run in parallel.
//
// # Inventory
//
// One datacenter (DatacenterName, "DC0") holding one cluster (ClusterName)
// and no standalone host. vCenter reports itself as 8.0.3 (API 8.0.3.0).
//
// Every host of the cluster (Options.Hosts, default 3) has:
//   - vmnic0 and vmnic1: 10 GbE, no RDMA; vmnic0 is the uplink of vSwitch0.
//   - vmnic4 and vmnic5: 100 GbE ConnectX NICs (driver nmlx5_core) with a
//     MAC unique to the host, paired with the RDMA devices vmrdma0 and
//     vmrdma1 (active, MTU 4096, RoCE v1 and v2). Their PCI functions,
//     0000:d8:00.0 and 0000:d8:00.1 (the two ports of a ConnectX-6 Dx,
//     15b3:101d), are SR-IOV physical functions (PFs): config.pciPassthruInfo
//     and the HostPciPassthruSystem list them as HostSriovInfo, passthrough
//     capable and not enabled, SR-IOV capable with
//     maxVirtualFunctionSupported 8 (the firmware's NUM_OF_VFS, as in
//     NVIDIA's SR-IOV guides), off, no VF.
//   - vmk0 on "Management Network" (MTU 1500) and vmk1 on the standard port
//     group "pvrdma-vmk" of vSwitch1 (MTU 9000, no uplink), with an address
//     from 192.0.2.0/24 (TEST-NET-1, simulated only) unique to the host.
//   - the advanced option Net.PVRDMAVmknic, set to "".
//   - ESXi 8.0.3 (config.product, summary.config.product: build 24022510,
//     API 8.0.3.0, product line embeddedEsx). Options.HostVersions gives
//     hosts, by index, another release vCenter 8.0.3 manages (7.0.0 to
//     8.0.3).
//   - its own firewall rulesets, including "pvrdma" (TCP 28250-28761,
//     inbound and outbound), disabled and open to all addresses.
//   - GPUs: two NVIDIA H100 SXM5 80GB at 0000:3b:00.0 and 0000:5e:00.0,
//     passthrough enabled and active, and one NVIDIA A100 40GB at
//     0000:af:00.0, passthrough capable but not enabled. They are listed in
//     hardware.pciDevice, config.pciPassthruInfo, config.graphicsInfo and by
//     the host's HostPciPassthruSystem.
//   - Graphics: its own HostGraphicsManager (configManager.graphicsManager),
//     whose graphicsInfo, graphicsConfig, sharedPassthruGpuTypes and
//     sharedGpuCapabilities are the host's config ones. The configuration
//     is ESXi's default (Shared, performance). A GPU passed through is
//     "direct"; one that is not is "sharedDirect" once the host's graphics
//     started with it configured Shared Direct, else "basic" (no host
//     driver: compute GPUs have no VMware shared graphics).
//     UpdateGraphicsConfig keeps a configuration at once; the GPUs follow at
//     the host's next reboot ("you must restart Xorg on the host", vSphere
//     Resource Management), or at once for a GPU given back by passthrough.
//     A GPU in sharedDirect offers its C-series vGPU types
//     (sharedPassthruGpuTypes, with vMotion and suspend in
//     sharedGpuCapabilities): grid_a100-40c … grid_a100-4c for the A100,
//     nvidia_h100xm-80c … nvidia_h100xm-4c for an H100 (no 16C, see
//     graphics.go), from NVIDIA AI Enterprise's tables. QueryConfigTarget
//     lists them too (sharedGpuPassthroughTypes, vgpuDeviceInfo,
//     vgpuProfileInfo), for a host or the whole cluster.
//   - vGPUs (PCI passthrough devices with a vmiop backing, Lab.AttachVGPU)
//     are admitted at power-on (vm_vgpu.go): each takes a GPU of the VM's
//     host in sharedDirect that offers its profile and holds no other
//     profile, up to NVIDIA's maximum per GPU, placed by the host's
//     assignment policy; otherwise the power-on fails with
//     InsufficientGraphicsResourcesFault. The host lists a running VM on the
//     GPUs its vGPUs use (graphicsInfo.vm) until it powers off.
//   - InfiniBand: two single-port NVIDIA ConnectX-7 cards (15b3:1021, "MT2910
//     Family [ConnectX-7]", class Ethernet controller as ESXi's nmlx5 driver
//     needs) whose physical functions are 0000:86:00.0 and 0000:87:00.0. No
//     vmnic is paired with them. config.pciPassthruInfo and the
//     HostPciPassthruSystem list them as HostSriovInfo: passthrough capable
//     and not enabled, SR-IOV capable with maxVirtualFunctionSupported 16,
//     off, no VF.
//   - Virtual functions (VFs): once SR-IOV of a PF is active, its VF k (from
//     0) is the PCI device whose routing id is the PF's + First VF Offset +
//     k × VF Stride (the PCIe SR-IOV capability, as Linux's
//     pci_iov_virtfn_devfn computes it), stride 1: offset 1 for the
//     InfiniBand PFs (0000:86:00.1 … 00.7, 01.0, …), 2 for vmnic4 (VFs
//     0000:d8:00.2 … 01.1) and 9 for vmnic5 (0000:d8:01.2 … 02.1), so that
//     no two functions meet. VFs are 15b3:101e ("ConnectX Family mlx5Gen
//     Virtual Function"), listed in hardware.pciDevice and, passthrough
//     capable, in pciPassthruInfo.
//   - config.pciPassthruInfo and the HostPciPassthruSystem also list the
//     PCI functions of vmnic0 and vmnic1, passthrough capable and not
//     enabled, and every other PCI device of the host (vcsim's chipset,
//     bridges and controllers), not passthrough capable (HostPciPassthruInfo:
//     "the state of PciPassthru for all pci devices").
//   - UpdatePassthruConfig refuses (HostConfigFault) to turn SR-IOV on for a
//     function passed through whole. No public source says what ESXi does
//     then; the lab takes the safe answer and changes nothing.
//     capability.deviceRebindWithoutRebootSupported is true: passthrough
//     and SR-IOV changes apply without a reboot; with
//     Options.HostsNeedReboot it is false on every host.
//   - no SR-IOV network device pool (config.sriovDevicePool, the
//     HostPciPassthruSystem's sriovDevicePoolInfo) until a switch has an
//     uplink with SR-IOV active.
//
// With Options.NewerGPUHost the cluster's last host is of a newer GPU
// generation: instead of the GPUs above it has two NVIDIA H200 SXM 141GB
// (10de:2335, NVIDIA gpu-admin-tools devid_names; 141 GB HBM3e per NVIDIA's
// datasheet) at 0000:19:00.0 and 0000:9b:00.0, active for passthrough
// (lab-chosen addresses). It needs at least two hosts. Lab.GPUs still names
// the other hosts' GPUs.
//
// Options.DGXHosts builds hosts as an NVIDIA DGX H100 (topology.go, after
// the DGX H100 User Guide's Network Modules table): eight H100 SXM5 80GB
// instead of the lab's GPUs, each under one PCIe switch with its
// single-port ConnectX-7 compute card (SR-IOV capable as the lab's other
// ConnectX-7), every device with its parent bridge
// (HostPciDevice.parentBridge), and two NUMA nodes listing their devices
// (HostNumaNode.pciId). The GPUs' buses are the lab's choice. Other hosts
// report one NUMA node and no PCI ids on it, as vcsim does.
//
// Virtual machines, all powered off, placed on the hosts in turn:
//   - Options.VMs "modern" VMs (default 2) named hpc-node-0, hpc-node-1, …:
//     vmx-19, BIOS firmware, ubuntu64Guest, 4 vCPU, 8 GiB, one disk and one
//     vmxnet3 adapter on "VM Network". 0 means the default; a lab always has
//     at least one.
//   - bare-node: like a modern VM but without any network adapter.
//   - legacy-node: like a modern VM but hardware version vmx-11.
//   - installed-node: like a modern VM, but its guest OS is reported as
//     installed (guest.guestFamily "linuxGuest", guestId, guestFullName), as
//     vCenter reports once VMware Tools have run. The other VMs report no
//     guest OS.
//
// # Behaviour added to vcsim
//
// Each item is documented vSphere behaviour and has its own test here.
//
//   - CreateDVS_Task fills config.productInfo (the newest version when the
//     spec names none: DVSCreateSpec.productInfo, vSphere Web Services API),
//     config.configVersion and config.uplinkPortgroup, checks the version
//     and MTU, and adds the hosts of the spec.
//   - ReconfigureDvs_Task applies the spec (name, description, maxMtu,
//     uplink policy, …; unset fields keep their value), checks and bumps
//     configVersion (ConcurrentAccess when stale), and adds, edits and
//     removes hosts with their uplinks in config.host and in the hosts'
//     config.network.proxySwitch. Unknown or already claimed uplinks,
//     members edited or removed without being members, and removing a host
//     whose VMs use the switch are refused.
//   - Switch versions accept hosts of their ESXi version or later.
//     CreateDVS_Task and ReconfigureDvs_Task (hosts added), and
//     PerformDvsProductSpecOperation_Task (members, on upgrade), refuse an
//     older host with the call fault NotSupported. The switch manager's
//     QueryDvsCompatibleHostSpec, QueryCompatibleHostForNewDvs and
//     QueryCompatibleHostForExistingDvs answer by the same rule, and a
//     switch publishes it in capability.compatibleHostComponentProductInfo
//     (vSphere Web Services API; Ansible vmware_dvs_host).
//   - Each member host has one uplink port per uplink name in the uplink
//     port group, listed in config.host[].uplinkPortKey and in the host
//     proxy switch's uplinkPort. Each NIC of the backing gets uplinkPortKey
//     and uplinkPortgroupKey: the port the spec names, else its previous
//     one, else the first free one. Changing the number of uplink names
//     creates ports, or deletes unused ones and renames the rest; deleting a
//     port in use fails with ResourceInUse. FetchDVPorts reports uplink
//     ports with proxyHost, config.name and a pnic connectee, and applies
//     the uplinkPort and host criteria (DVSNameArrayUplinkPortPolicy,
//     DistributedVirtualSwitchHostMember,
//     DistributedVirtualSwitchHostMemberPnicSpec).
//   - EnableNetworkResourceManagement; PerformDvsProductSpecOperation_Task
//     "upgrade" (never to an older or unsupported version); the switch
//     manager's QueryDvsByUuid and QueryAvailableDvsSpec.
//   - CreateDVPortgroup_Task (the result is the port group);
//     ReconfigureDVPortgroup_Task merges, renames and checks configVersion.
//   - Destroy_Task of a switch (with its port groups, uplink port group
//     included) or a port group is refused with ResourceInUse while a VM
//     network adapter uses it.
//   - ReconfigVM_Task fails its task for: a firmware change unless powered
//     off, an unknown firmware, a PVRDMA adapter added or removed unless
//     powered off, on hardware below vmx-13, or with a device protocol the
//     hardware version does not offer, a PCI passthrough device hot-added or
//     not passthrough-active on the VM's host. Hosts' graphicsInfo lists the
//     VMs that have each GPU attached.
//   - SR-IOV network adapters (VirtualSriovEthernetCard; vSphere Web
//     Services API 8.0, VirtualSriovEthernetCard and its
//     SriovBackingInfo): ReconfigVM_Task fails its task for one added or
//     removed unless powered off (vSphere Networking, "SR-IOV Support": no
//     hot addition and removal of devices), and, added or edited, for an
//     SR-IOV backing without physical function backing, a PF that is not a
//     physical NIC with SR-IOV active on the VM's host, or automatic
//     assignment ("Automatic-0000:00:00.0", or no SR-IOV backing on add)
//     without an SR-IOV network device pool for the adapter's network on
//     the host; an edit without SR-IOV backing keeps it. CreateVM_Task
//     checks the same on the host it names. Otherwise vcsim keeps the
//     adapter as any network adapter (MAC, the network's vm list).
//   - PowerOnVM_Task and PowerOnMultiVM_Task give each SR-IOV adapter a VF
//     of its host (vSphere Networking: "the ESXi host selects a free
//     virtual function"): its VF backing if free (a hint, as the API
//     reference says), else the first free VF of its PF or, with automatic
//     assignment, of the first PF by PCI id of its network's pool, the PF
//     id becoming "Automatic-<PF>". A VF is taken when another powered-on
//     VM's adapter has it or a VM of the host has it as PCI passthrough
//     device. Without a free VF the task fails (GenericVmConfigFault with
//     Broadcom KB 309346's message) and the VM stays off. A VF stays
//     assigned at power-off. A VM with a PCI passthrough device its host
//     has not active for passthrough (turned off under it, which
//     UpdatePassthruConfig allows) fails to power on, naming the device
//     (vm_passthrough_power.go).
//   - Networks and distributed port groups list in their vm property the
//     VMs with a network adapter on them, kept as adapters are added,
//     removed or re-backed and VMs created or destroyed.
//   - QueryConfigOption(Ex) reports the PVRDMA device protocols per hardware
//     version: none below vmx-13, PVRDMA with no protocol choice at vmx-13
//     and vmx-20 and later, RoCE v1 and v2 (v2 the default) at vmx-14 to
//     vmx-19 (the rule of Ansible's vmware_guest_network, the only public
//     one; vm.go says what stays unverified); QueryConfigTarget lists the passthrough-active devices and,
//     in sriov, the physical NICs with SR-IOV active, with the pool of
//     their switch.
//   - Per-host firewall rulesets with RefreshFirewall and UpdateRuleset;
//     HostPciPassthruSystem with UpdatePassthruConfig and Refresh. NICs the
//     host uses are accepted. HostSriovConfig turns SR-IOV of a PF on or off
//     with a VF count (numVirtualFunctionRequested); a device that is not
//     SR-IOV capable or a count above maxVirtualFunctionSupported is refused
//     with HostConfigFault. A change takes effect at once when applyNow is
//     unset or true and the host has deviceRebindWithoutRebootSupported;
//     otherwise (applyNow false, or Options.HostsNeedReboot) it is pending
//     — enabled but not active, VFs absent — until RebootHost. Taking
//     effect sets passthruActive, sriovActive and numVirtualFunction, adds
//     or removes the VFs, and sets the GPUs' graphics type. SR-IOV of a NIC
//     that is a switch's uplink is accepted (vSphere Networking, "Enable
//     SR-IOV on a Host Physical Adapter"; the PF keeps carrying the
//     switch's traffic, "mixed mode"). UpdateOptions refuses unknown keys
//     of a host with InvalidName.
//   - Hardware labels (API 7.0.2.0): UpdatePassthruConfig sets a device's
//     hardwareLabel as its configuration carries it, at once (host.go says
//     why an omitted label clears it); QueryConfigTarget offers each
//     dynamic passthrough device with its label (customLabel); a Dynamic
//     DirectPath device with a customLabel is backed only by a device with
//     that label, on the VM's host or, in a DRS cluster, on another host of
//     the cluster (Assignable Hardware; vm.go, checkPassthrough).
//   - Hosts' SR-IOV network device pools (config.sriovDevicePool and the
//     HostPciPassthruSystem's sriovDevicePoolInfo): one
//     HostSriovNetworkDevicePoolInfo per standard (switchKey) or
//     distributed (switchUuid) switch with uplinks whose SR-IOV is active,
//     those uplinks in pnic; kept as SR-IOV takes effect and as uplinks
//     change.
//   - HostNetworkSystem.UpdateVirtualSwitch sets a standard switch's spec
//     and its uplinks, the NICs of its bond bridge; an unknown switch or
//     NIC, another bridge and a NIC another switch has are refused.
//   - esxcli "network diag ping" (metadata and command) through each host's
//     managed method executer, over a fabric model: switch-port MTUs
//     (SetPortMTU, default 9000), per-link MTUs (SetLinkMTU), hosts that
//     drop everything (DropAll). A don't-fragment ping bigger than the
//     source vmknic's MTU fails with "Message too long"; one bigger than the
//     path is lost after the wait (SetLostProbeDelay). Pings lists them.
//   - vCenter's other endpoints beside /sdk: the vSphere Automation API
//     (govmomi's vAPI simulator: /rest/com/vmware/cis/session, tagging,
//     content libraries) and /api/session (vSphere Automation API, "Cis
//     Session": POST with basic authentication answers 201 and the token,
//     GET the session, DELETE 204; one set of sessions with /rest), and the
//     storage policy service /pbm (govmomi's PBM simulator). Only the lab's
//     user and password log in.
//   - A reference through a supertype names the object, as on vCenter:
//     ComputeResource:domain-cN is the cluster (vSphere Web Services API,
//     ClusterComputeResource extends ComputeResource; HashiCorp's vSphere
//     provider reads clusters so, computeresource.StandaloneFromID), for
//     RetrieveProperties(Ex), CreateFilter and the methods of ComputeResource
//     and ManagedEntity.
//   - Every VM has its own environment browser (envbrowser-N for vm-N, as
//     vCenter names them), removed with the VM, which answers as its
//     compute resource's ("identical to the environment browser on the
//     ComputeResource", VirtualMachine.environmentBrowser) except that
//     QueryConfigOption(Ex) without key or host returns the VM's own
//     hardware version (EnvironmentBrowser.QueryConfigOption; govc
//     vm.option.info -vm, govmomi issue #2270).
//   - config.swapPlacement ("inherit", "vmDirectory", "hostLocal";
//     VirtualMachineConfigSpec/ConfigInfo.swapPlacement): "inherit" by
//     default with capability.swapPlacementSupported true, set by
//     ReconfigVM_Task (an unknown policy fails the task with
//     InvalidArgument), CreateVM_Task and CloneVM_Task (a clone keeps its
//     source's unless the spec sets it).
//   - esxcli "network firewall ruleset" list and set (-r/--ruleset-id,
//     -e/--enabled, -a/--allowed-all) and "network firewall ruleset
//     allowedip" list, add and remove (-i/--ip-address), metadata and
//     commands, through each host's managed method executer, on the host's
//     own rulesets: a change made through esxcli or through
//     HostFirewallSystem is seen through both (vSphere CLI Concepts and
//     Examples, firewall procedure; ESXi's CLI metadata as pyvisdk's
//     esxcli handlers record it). Lists answer Name/Enabled and
//     Ruleset/AllowedIPAddresses ("All", or addresses then networks).
//     ESXi's messages where public: "Already allowed all ip", "Already use
//     allowed ip list" (--enabled is still applied), "Ip address already
//     exist."; the lab's own plain messages otherwise.
//   - UnregisterVM writes the VM's configuration into its .vmx (the lab's
//     own encoding), and RegisterVM_Task of that .vmx brings the VM back
//     under a new managed object id ("If you remove an object, for example,
//     a virtual machine, from the inventory, and then put it back, the
//     reference changes", vSphere API reference, ManagedObjectReference). It
//     comes back with the configuration the .vmx holds: hardware version,
//     devices with their keys, MACs and backings, extraConfig, firmware,
//     CPU, memory, reservations, swap placement, and the BIOS UUID
//     (uuid.bios: Broadcom KB 344089). It keeps its instance UUID unless
//     another VM has it, then gets a new one (vCenter patches duplicates).
//     Without a name it is named after the .vmx's display name
//     (Folder.RegisterVM_Task). summary.config, the networks' vm lists and
//     the hosts' graphicsInfo follow. A missing <name>.nvram or vmware.log
//     beside the .vmx is created empty (ESXi recreates a missing NVRAM:
//     Broadcom KB 317902). vcsim rebuilt the VM from the path alone (vmx-13,
//     BIOS, 1 vCPU, 32 MB, default devices). Lab.ReregisterVM does both
//     steps, as an administrator does after storage maintenance.
//   - Maintenance mode and reboots (maintenance.go): EnterMaintenanceMode_Task
//     evacuates what DRS (fully automated, as the lab's cluster is) can
//     move and waits for the rest, up to its timeout; RebootHost_Task is
//     refused outside maintenance mode unless forced, and the host is
//     notResponding for Options.RebootTime, then back with its pending
//     passthrough and SR-IOV changes active. Lab.MaintenanceWindows records
//     the stays in maintenance mode, Lab.KeepHostDown keeps a host from
//     coming back, Lab.SetClusterDRS changes the automation level.
//   - vMotion and maintenance mode of VMs with vGPUs (vm_vgpu_migrate.go):
//     a running one moves only with vCenter's vgpu.hotmigrate.enabled true
//     (Lab.SetVCenterSetting; false at first) to a host whose GPUs take its
//     vGPUs, and maintenance mode moves it only when the cluster's DRS
//     advanced option VgpuMMAutomationTimeoutSecs is -1
//     (Lab.SetClusterDRSOption; vcsim drops a spec's DRS options, the lab
//     keeps them).
//   - SearchIndex.FindByUuid and FindAllByUuid keep working after esxcli
//     use (vcsim's panic on the executer it registers) and honour the
//     datacenter scope.
//
// # An external vCenter
//
// Connect gives a Lab over an existing vCenter instead, for the acceptance
// suite's external runs: a Target names the datacenter, cluster, hosts, VMs
// and hardware the tests may use (RDMANICs, Vmknic and GPUs name the same
// roles in the simulator), and the admin methods, plain vSphere calls,
// work on it. What only the simulator can do (faults, delays, call counts,
// the fabric, reboots, hosts removed, VMs created, cloned, upgraded or
// destroyed) returns ErrNotSimulated or does nothing there, and Unavailable
// lists the calls. Footprint describes what the provider's resources
// change, to compare before and after a run.
//
// Options.Latency delays every request as a real vCenter's round trip would:
// SOAP calls to /sdk, and the REST, vAPI and storage policy endpoints too
// (countRequests), each counted by Calls.
// Tests inject faults and delays with FailTaskOnce, FailCall, FailRead,
// Delay, Hold and TerminateSessions, and count calls with Calls. The lab's own client
// (Client) is exempt from all of them.
//
// # Files
//
// The files are layered, and a file uses only files of lower layers. At the
// bottom, shared helpers and data: method.go (the methods' prologue, faults
// and tasks), objects.go (helpers on inventory objects), hardware.go (the
// hosts' hardware), fabric.go (the network esxcli pings cross), rest.go
// (the REST and storage policy endpoints) and dvs_compat.go (switch
// versions and hosts' ESXi versions, on method.go). Then extension.go, the
// object the handlers hang on. Then the handlers, one file per managed
// object: network.go, host.go, vm_sriov.go (SR-IOV adapters) and vm.go on
// it, vm_register.go, portgroup.go, dvs_members.go, ping.go (the esxcli
// executer) and esxcli_firewall.go on it and host.go, maintenance.go (on
// host.go's reboot of the passthrough system), search.go and compute.go
// (references through a supertype), and above them
// environment.go (on vm.go's hardware version rules, vm_sriov.go's SR-IOV
// NICs and compute.go), dvs.go (on dvs_members.go, dvs_compat.go and
// portgroup.go) and vswitch.go (on dvs_members.go). At the top the Lab's
// own methods, which use one another: inventory.go builds the inventory,
// handler.go routes calls and changes to the handlers, faults.go holds what
// tests inject and observe, admin*.go the out-of-band changes (RebootHost,
// ReregisterVM and Esxcli among them), handbuilt.go (on admin*.go) the lab
// as an administrator following the articles by hand leaves it, for
// adoption with terraform query (BuildByHand; the lab command's
// -hand-built), external.go the Lab over an external
// vCenter, footprint.go what a run must leave as it found it, and lab.go the
// Lab type, Start and Close.
package vcsimlab
