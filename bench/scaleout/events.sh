#!/usr/bin/env bash
# Events under kill -9 (issue 21, decision 0027): 2 contextd instances on one throwaway
# PostgreSQL 15 publish to one `nats-server -js` (stream EVENTS) under branch-pair load
# (bench/http mcp_load --branch-pairs); instance 1 is killed with SIGKILL mid-run. The survivor
# takes over the killed instance's outbox rows once their lease ran out (15 s). Then the stream
# is read back (the NATS JavaScript client, tools/npm/events) and compared with the database:
# events expected (one branch.created per branch, one branch.folded per completed branch, one
# branch.force_returned per otherwise ended branch), seen, missing, duplicates, phantom (in the
# stream, not in the database).
#
# PAUSE_NATS=1 (the default) stalls nats-server (SIGSTOP) for the second before the kill, so that
# the killed instance certainly leaves unpublished rows; PAUSE_NATS=0 kills under normal flow.
#
#   bench/scaleout/events.sh     # DURATION=8 KILL_AFTER=3 CONC=12 PAUSE_NATS=1 BUILD=build/release
#                                # (or CONTEXTD=..., LOAD=...), PG_BIN=/usr/lib/postgresql/15/bin
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build/release}
CONTEXTD=${CONTEXTD:-$BUILD/src/cli/contextd}
LOAD=${LOAD:-$BUILD/bench/http/mcp_load}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
NATS_SERVER=${NATS_SERVER:-$(command -v nats-server || echo /usr/sbin/nats-server)}
DURATION=${DURATION:-8}
KILL_AFTER=${KILL_AFTER:-3}
CONC=${CONC:-12}
PAUSE_NATS=${PAUSE_NATS:-1}
for f in "$CONTEXTD" "$LOAD" "$PG_BIN/initdb" "$PG_BIN/postgres" "$NATS_SERVER"; do
  [[ -x $f ]] || { echo "missing $f" >&2; exit 1; }
done
[[ -d tools/npm/events/node_modules/nats ]] || { echo "missing tools/npm/events/node_modules" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/contextd-events.XXXXXX")
chmod 755 "$TMP"
PIDS=()
NATS_PID=""
source bench/scaleout/lib.sh
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  [[ -n $NATS_PID ]] && { kill "$NATS_PID" 2>/dev/null || true; wait "$NATS_PID" 2>/dev/null || true; }
  stop_postgres
  rm -rf "$TMP"
}
trap cleanup EXIT
start_postgres
sql postgres "CREATE DATABASE events" >/dev/null

NATS_PORT=$(free_port)
"$NATS_SERVER" -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$TMP/js" -l "$TMP/nats.log" &
NATS_PID=$!
for ((i = 0; i < 100; i++)); do (exec 3<>/dev/tcp/127.0.0.1/$NATS_PORT) 2>/dev/null && break; sleep 0.1; done
echo "postgres on 127.0.0.1:$PG_PORT, nats-server -js on 127.0.0.1:$NATS_PORT"
echo "contextd $CONTEXTD ($(git rev-parse --short HEAD)), $(nproc) cores, DURATION=$DURATION KILL_AFTER=$KILL_AFTER CONC=$CONC"

cat >"$TMP/config.yaml" <<YAML
context_folding:
  branch_creation_rate_limit: 1000000/second
  max_concurrent_branches_per_instance: 10000
store:
  backend: postgres
  postgres:
    url: "postgresql://$PG_USER@127.0.0.1:$PG_PORT/events"
events:
  nats:
    url: "nats://127.0.0.1:$NATS_PORT"
    jetstream: true
    stream: EVENTS
    reconnect_wait_ms: 100
YAML
"$CONTEXTD" migrate --config "$TMP/config.yaml" >/dev/null

URLS=()
start() {
  local i=$1 url="" k
  : >"$TMP/err$i"
  "$CONTEXTD" serve --config "$TMP/config.yaml" --data-dir "$TMP/data$i" --listen 127.0.0.1:0 \
    --log-level info 2>"$TMP/err$i" &
  PIDS[i]=$!
  for ((k = 0; k < 200; k++)); do
    url=$(grep -o 'http://[^ ]*/mcp' "$TMP/err$i" | head -1) && [[ -n $url ]] && break
    sleep 0.1
  done
  [[ -n $url ]] || { echo "instance $i did not start:" >&2; cat "$TMP/err$i" >&2; exit 1; }
  URLS[i]=$url
}
start 0
start 1
for i in 0 1; do
  "$LOAD" --url "${URLS[i]}" --sessions $((CONC / 2)) --concurrency $((CONC / 2)) --duration "$DURATION" \
    --warmup 0 --branch-pairs --label "events/$i" >"$TMP/load$i" 2>"$TMP/load$i.err" &
  LP[i]=$!
done
if ((PAUSE_NATS)); then
  # NATS stalls for the last second before the kill (SIGSTOP): acks stop coming, so the killed
  # instance certainly leaves unpublished rows behind for the survivor to take over.
  sleep $((KILL_AFTER - 1))
  kill -STOP "$NATS_PID"
  sleep 1
else
  sleep "$KILL_AFTER"
fi
kill -9 "${PIDS[1]}"
wait "${PIDS[1]}" 2>/dev/null || true
killed_at=$(date +%s)
at_kill=$(sql events "SELECT count(*) FROM event_outbox")
((PAUSE_NATS)) && kill -CONT "$NATS_PID"
echo "kill -9 instance 1 at ${KILL_AFTER}s of ${DURATION}s (NATS stalled the second before: $PAUSE_NATS); outbox rows at the kill: $at_kill"
wait "${LP[0]}" "${LP[1]}" || true
left_at_kill=$(sql events "SELECT count(*) FROM event_outbox")
# The survivor takes the killed instance's rows over once their lease (15 s) ran out: wait until
# the outbox is empty (at most 300 checks).
for ((k = 0; k < 300; k++)); do
  [[ $(sql events "SELECT count(*) FROM event_outbox") == 0 ]] && break
  sleep 0.1
done
drained_after=$(($(date +%s) - killed_at))
taken=$(curl -sf "${URLS[0]%/mcp}/metrics" | awk '/^contextd_events_outbox_taken_over_total/ {print $2}')
kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true
PIDS=()
left=$(sql events "SELECT count(*) FROM event_outbox")
if ((left > 0)); then
  echo "left in the outbox (owner, lease_until_ms, created_ms, type), now $(date +%s%3N):"
  sql events "SELECT owner, lease_until_ms, created_ms, type FROM event_outbox ORDER BY seq" | sed 's/^/  /'
  grep -i "outbox\|events" "$TMP/err0" | tail -5 | sed 's/^/  survivor: /'
fi
created=$(sql events "SELECT count(*) FROM branches")
completed=$(sql events "SELECT count(*) FROM branches WHERE status = 'completed'")
forced=$(sql events "SELECT count(*) FROM branches WHERE status NOT IN ('created', 'active', 'completed')")
sql events "SELECT 'branch.created:' || id FROM branches UNION ALL
            SELECT 'branch.folded:' || id FROM branches WHERE status = 'completed' UNION ALL
            SELECT 'branch.force_returned:' || id FROM branches
              WHERE status NOT IN ('created', 'active', 'completed')" | sort >"$TMP/expected"
NATS_URL="nats://127.0.0.1:$NATS_PORT" node --input-type=module -e '
  const { connect } = (await import(process.cwd() + "/tools/npm/events/node_modules/nats/index.js")).default;
  const nc = await connect({ servers: process.env.NATS_URL });
  const jsm = await nc.jetstreamManager();
  const info = await jsm.streams.info("EVENTS");
  for (let s = info.state.first_seq; info.state.messages > 0 && s <= info.state.last_seq; s++) {
    const j = (await jsm.streams.getMessage("EVENTS", { seq: s })).json();
    console.log(`${j.id} ${j.type}:${j.branch_id}`);
  }
  await nc.close();' >"$TMP/seen_raw"
grep ' branch\.' "$TMP/seen_raw" | awk '{print $2}' | sort >"$TMP/seen"
expected=$(wc -l <"$TMP/expected")
seen=$(wc -l <"$TMP/seen")
dup_ids=$(awk '{print $1}' "$TMP/seen_raw" | sort | uniq -d | wc -l)
dup_events=$(uniq -d "$TMP/seen" | wc -l)
missing=$(comm -23 "$TMP/expected" <(sort -u "$TMP/seen") | wc -l)
phantom=$(comm -13 "$TMP/expected" <(sort -u "$TMP/seen") | wc -l)
for i in 0 1; do echo "mcp_load on instance $i: $(grep -v '^RESULT' "$TMP/load$i" | tail -1)"; done
echo "RESULT events: branches=$created completed=$completed force_returned=$forced outbox_rows_after_kill=$left_at_kill taken_over=${taken:-?} drained_after_s=$drained_after outbox_left=$left"
echo "RESULT events: expected=$expected seen=$seen missing=$missing duplicate_ids=$dup_ids duplicate_events=$dup_events phantom=$phantom"
((missing == 0 && dup_ids == 0 && dup_events == 0 && phantom == 0)) && echo "RESULT events: ok" || echo "RESULT events: MISMATCH"
