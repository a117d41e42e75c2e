#!/usr/bin/env bash
# Run the viewer in tmux, send keys, print the screen after each group of keys.
#
#   scripts/tui_tmux.sh [TRACE] [WIDTHxHEIGHT] ["keys;keys;..."]
#
# Each ';'-separated group is passed to `tmux send-keys` (tmux key names: Enter, Escape, Down,
# C-c, ...; a literal ';' cannot be sent), then the pane is captured and printed.
# Environment: PROFVIEW (the command; default: the checkout's .venv profview, else profview on
# PATH), PROFVIEW_ENV (e.g. "NO_COLOR=1 TERM=xterm-256color"), PROFVIEW_KEY_WAIT (seconds after
# each group, default 1), PROFVIEW_TIMEOUT (seconds to wait for the trace to load, default 60).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
trace=${1:-samples/resnet50_train_amp.pt.trace.json.gz}
size=${2:-80x24}
steps=${3:-""}
if [ -z "${PROFVIEW:-}" ]; then
  if [ -x "$here/.venv/bin/profview" ]; then PROFVIEW="$here/.venv/bin/profview"; else PROFVIEW=profview; fi
fi
session=profview-$$
tmux new-session -d -s "$session" -x "${size%x*}" -y "${size#*x}" \
  "env ${PROFVIEW_ENV:-} $PROFVIEW $trace; echo \"[exit code \$?]\"; sleep 600"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT

# Wait until the loading screen is gone (the view tabs, an error line or the exit code show).
deadline=$((SECONDS + ${PROFVIEW_TIMEOUT:-60}))
until tmux capture-pane -p -t "$session" | grep -qE '1 Overview|1 Ranks|1 Kernels|\[exit code|profview: error'; do
  if [ $SECONDS -ge $deadline ]; then echo "timed out waiting for the viewer" >&2; break; fi
  sleep 0.2
done
sleep 0.5
echo "=== $trace at $size"
tmux capture-pane -p -t "$session"
IFS=';' read -ra groups <<< "$steps"
for group in "${groups[@]}"; do
  [ -z "$group" ] && continue
  # shellcheck disable=SC2086
  tmux send-keys -t "$session" $group
  sleep "${PROFVIEW_KEY_WAIT:-1}"
  echo "=== after keys: $group"
  tmux capture-pane -p -t "$session"
done
