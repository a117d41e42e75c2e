#!/usr/bin/env bash
# Run the viewer in tmux, send keys, print the screen: scripts/tui_tmux.sh TRACE WIDTHxHEIGHT "keys;keys;..."
# Each ';'-separated group is sent with tmux send-keys, then the pane is captured and printed.
set -euo pipefail
trace=${1:-samples/resnet50_train_amp.pt.trace.json.gz}
size=${2:-80x24}
steps=${3:-""}
profview=${PROFVIEW:-profview}
session=profview-$$
tmux new-session -d -s "$session" -x "${size%x*}" -y "${size#*x}" "$profview $trace; sleep 2"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT
sleep "${PROFVIEW_WAIT:-4}"
echo "=== $trace at $size"
tmux capture-pane -p -t "$session"
IFS=';' read -ra groups <<< "$steps"
for group in "${groups[@]}"; do
  [ -z "$group" ] && continue
  # shellcheck disable=SC2086
  tmux send-keys -t "$session" $group
  sleep "${PROFVIEW_KEY_WAIT:-1.5}"
  echo "=== after keys: $group"
  tmux capture-pane -p -t "$session"
done
