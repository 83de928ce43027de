#!/bin/sh
# Carries the provisioner client's /metrics (its control socket, a unix
# socket no Prometheus scrapes) into node_exporter's textfile directory,
# where examples/prometheus/mesh-provisioner-client.rules.yml reads it.
# Run it as root every 15-30 s, e.g. from a systemd timer:
#   /etc/systemd/system/mesh-provisioner-client-metrics.service
#     [Service]
#     Type=oneshot
#     ExecStart=/bin/sh /usr/local/lib/mesh-provisioner/mesh-provisioner-client-textfile.sh
#   /etc/systemd/system/mesh-provisioner-client-metrics.timer
#     [Timer]
#     OnBootSec=30s
#     OnUnitActiveSec=15s
#     [Install]
#     WantedBy=timers.target
# TEXTFILE_DIR is node_exporter's --collector.textfile.directory (Debian's
# prometheus-node-exporter: /var/lib/prometheus/node-exporter).
#
# - The go_ and process_ families are left out: node_exporter serves its
#   own, and the same name from two places fails its gather ("collected
#   before with the same name and label values").
# - A client not answering leaves `provisioner_healthy 0` (the alert
#   ProvisionerClientUnhealthy), not the last file written, which would
#   say healthy for ever, nor no file, on which no alert fires.
# - Written beside and renamed, so node_exporter never reads half a file.
set -u
CONTROL=${CONTROL:-/run/mesh-provisioner-client/control.sock}
TEXTFILE_DIR=${TEXTFILE_DIR:-/var/lib/prometheus/node-exporter}
out=$TEXTFILE_DIR/mesh-provisioner-client.prom
tmp=$TEXTFILE_DIR/.mesh-provisioner-client.prom.$$
trap 'rm -f "$tmp" "$tmp.raw"' EXIT
if curl -sf --max-time 10 --unix-socket "$CONTROL" http://client/metrics >"$tmp.raw"; then
	grep -Ev '^(# (HELP|TYPE) )?(go|process)_' "$tmp.raw" >"$tmp" || exit 1
else
	printf '# HELP provisioner_healthy 1 while the client says it is healthy; 0 here: its control socket did not answer.\n# TYPE provisioner_healthy gauge\nprovisioner_healthy 0\n' >"$tmp" || exit 1
fi
chmod 0644 "$tmp" && mv -f "$tmp" "$out"
