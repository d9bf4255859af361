// Package analyze runs the verdict engine offline, on YAML or JSON dumps of
// a cluster: a KubeVirt must-gather, an `oc adm inspect` directory, or the
// output of `kubectl get -o yaml`. It is what `vmobs analyze` does.
//
// The pipeline is Load (files to typed objects), GroupVMs (objects to one
// group per VM, as the controller's watches would gather them), Analyze
// (verdict.Evaluate per group, giving complete VMObservation objects) and
// WriteTable / WriteList (the output). Run chains them for the command.
//
// Decisions, for support engineers reading a dump:
//
//   - Directories are walked recursively and only files named *.yaml, *.yml
//     or *.json are read; a must-gather also holds logs, virsh XML and
//     node-gather text dumps, which are not Kubernetes objects. A file named
//     on the command line is always read, whatever its name ("-" is
//     standard input). Hidden directories (.git) are not entered and
//     symbolic links to directories are not followed.
//   - Layouts met in practice (kubevirt/must-gather collection-scripts and
//     oc adm inspect): namespaces/<ns>/kubevirt.io/<resource>/<name>.yaml and
//     namespaces/<ns>/kubevirt.io/<resource>.yaml (a List),
//     namespaces/<ns>/kubevirt.io/virtualmachines/{custom,template-based}/,
//     namespaces/<ns>/crs/<resource>.kubevirt.io/<name>.yaml (gather_crs),
//     namespaces/<ns>/pods/<pod>/<pod>.yaml next to its logs,
//     namespaces/<ns>/core/pods.yaml (a PodList) and
//     cluster-scoped-resources/core/nodes/<node>.yaml. In a KubeVirt
//     must-gather, nodes/<node>/ holds node-gather output (dmesg, ip.txt,
//     pcidp_config.json), not Node objects. The loader does not depend on
//     the layout: it reads what the files hold.
//   - Files larger than Options.MaxFileSize (64 MiB by default) are refused
//     with a reason; gzip or zip archives are refused with a hint to
//     extract them.
//   - A must-gather holds the same object several times (per-object files
//     from `oc adm inspect`, aggregated lists such as core/pods.yaml, and
//     the crs/ copies of gather_crs). Copies of one object (same kind,
//     namespace and name) are merged: the newer incarnation wins (the later
//     creationTimestamp when the UIDs differ), then the higher
//     resourceVersion, then the first file read.
//   - An object without metadata.namespace takes the namespace of the
//     must-gather directory it sits in (namespaces/<ns>/...), else
//     "default", as kubectl would.
//   - A launcher pod belongs to the VMI named by its controller ownerRef; a
//     pod whose ownerRef carries another UID belongs to a previous VMI of the
//     same name and is left out (with a warning). A pod without a controller
//     ownerRef is matched by the label kubevirt.io/created-by = VMI UID.
//   - A VMObservation found in the input contributes its spec (policy
//     overrides), applied over the command-line policy.
//   - Analyze never changes a verdict: the status is verdict.Evaluate's,
//     with Previous = nil (a dump holds no stored status, so
//     lastTransitionTime is what the evidence says, or now), and
//     observedGeneration is the declared VMObservation's generation, if any.
//     The output objects carry the ownerReference the controller would set
//     (the VirtualMachine when there is one, else the VMI).
package analyze
