#!/bin/sh
# Runs one audit of a primary and its replicas and hands the metrics on.
#
#   PGPLAN_NODES   the nodes, one conninfo per line ("host=pg-primary dbname=app", ...)
#   PUSHGATEWAY_URL  push to this Pushgateway (grouped by job=pgplan_audit, instance=$PGPLAN_INSTANCE)
#   TEXTFILE_DIR   or write pgplan.prom into node_exporter's textfile directory
#
# pgplan's exit codes: 0 clean, 1 findings (the metrics say which), 3 some node unreadable
# (pgplan_audit_node_up says which), 2 nothing could be read. The metrics are handed on in every
# case where pgplan wrote them; the job fails only when it could not audit at all.
set -u
instance="${PGPLAN_INSTANCE:-default}"
nodes_file="$(mktemp)"
printf '%s\n' "${PGPLAN_NODES:?set PGPLAN_NODES}" >"$nodes_file"
set --
while IFS= read -r node; do
  [ -n "$node" ] && set -- "$@" -d "$node"
done <"$nodes_file"
rm -f "$nodes_file"

if [ -n "${TEXTFILE_DIR:-}" ]; then
  # -o writes under a temporary name in the same directory and renames it into place: the
  # collector never reads half a file.
  pgplan audit "$@" --format prometheus ${PGPLAN_AUDIT_ARGS:-} -o "$TEXTFILE_DIR/pgplan-$instance.prom"
  code=$?
else
  out="$(mktemp)"
  pgplan audit "$@" --format prometheus ${PGPLAN_AUDIT_ARGS:-} -o "$out"
  code=$?
  if [ -s "$out" ]; then
    # PUT replaces the whole group, so series of findings that are gone disappear with it.
    curl --fail --silent --show-error --retry 3 -X PUT --data-binary "@$out" \
      "${PUSHGATEWAY_URL:?set PUSHGATEWAY_URL or TEXTFILE_DIR}/metrics/job/pgplan_audit/instance/$instance" ||
      code=2
  fi
  rm -f "$out"
fi
case "$code" in
  0 | 1 | 3) exit 0 ;;
  *) exit "$code" ;;
esac
