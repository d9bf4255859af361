#!/usr/bin/env bash
# Copies into the Helm chart (charts/vmobs) what it shares with config/ and
# Helm cannot read from outside the chart: the CRDs (crds/, which Helm
# installs as they are), the manager's ClusterRole rules that `make
# manifests` generates, the alerts, the Alertmanager inhibition rules (for
# users to merge into their Alertmanager) and the Grafana dashboards
# (files/, which the templates read).
# `make manifests` runs it; with --check it changes nothing and fails when a
# copy differs (hack/verify-generated.sh, `make helm-package`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
chart=$root/charts/vmobs

pairs=()
for f in "$root"/config/crd/bases/*.yaml; do
  pairs+=("$f" "$chart/crds/$(basename "$f")")
done
pairs+=("$root/config/rbac/role.yaml" "$chart/files/role.yaml")
pairs+=("$root/config/prometheus/prometheusrule.yaml" "$chart/files/prometheusrule.yaml")
pairs+=("$root/config/openshift-user-workload/prometheusrule.yaml" "$chart/files/prometheusrule-user-workload.yaml")
pairs+=("$root/docs/alertmanager-inhibition.yaml" "$chart/files/alertmanager-inhibition.yaml")
for f in "$root"/config/grafana/*.json; do
  pairs+=("$f" "$chart/files/dashboards/$(basename "$f")")
done

if [[ ${1:-} == --check ]]; then
  stale=0
  for ((i = 0; i < ${#pairs[@]}; i += 2)); do
    if ! cmp -s "${pairs[i]}" "${pairs[i + 1]}"; then
      echo "stale chart copy: ${pairs[i + 1]#"$root"/} differs from ${pairs[i]#"$root"/}" >&2
      stale=1
    fi
  done
  for f in "$chart"/crds/*.yaml; do
    if [[ ! -e "$root/config/crd/bases/$(basename "$f")" ]]; then
      echo "stale chart copy: ${f#"$root"/} is not in config/crd/bases" >&2
      stale=1
    fi
  done
  if [[ $stale != 0 ]]; then
    echo "run hack/sync-chart.sh (or make manifests) and commit the result" >&2
  fi
  exit $stale
fi

rm -f "$chart"/crds/*.yaml "$chart"/files/dashboards/*.json
mkdir -p "$chart/files/dashboards"
for ((i = 0; i < ${#pairs[@]}; i += 2)); do
  cp "${pairs[i]}" "${pairs[i + 1]}"
done
