#!/usr/bin/env bash
# blagent as Agentless's file-level stage, then Agentless's own related-level stage (unmodified)
# on its output, through the model-renaming proxy, with no network: by default against the
# scripted OpenAI-compatible server (set UPSTREAM and UPSTREAM_MODEL for a real endpoint).
#
#   AGENTLESS_SRC=/path/to/Agentless AGENTLESS_PY=/path/to/agentless-venv/bin/python \
#   DATASET=lite.jsonl REPOS=trees IDS=id1,id2 WORK=/tmp/rehearsal agentless_adapter/rehearse.sh
#
# Optional: TIKTOKEN_CACHE_DIR (Agentless counts tokens with tiktoken, which downloads its BPE
# file once; offline, point this at a folder that holds it), EDIT_LOCATION=1 to run Agentless's
# edit-location stage too, REPAIR=1 (with EDIT_LOCATION=1) its merge and repair, PORT_UPSTREAM / PORT_PROXY, BLAGENT (default .venv/bin/blagent).
set -euo pipefail
cd "$(dirname "$0")/.."
ADAPTER_ROOT=$PWD
: "${AGENTLESS_SRC:?an Agentless checkout}" "${AGENTLESS_PY:?a Python with Agentless requirements}"
: "${DATASET:?a SWE-bench-style JSONL}" "${REPOS:?trees at REPOS/<instance_id>}" "${IDS:?comma-separated ids}"
: "${WORK:?a work folder}"
BLAGENT=${BLAGENT:-$ADAPTER_ROOT/.venv/bin/blagent}
PORT_UPSTREAM=${PORT_UPSTREAM:-18000}
PORT_PROXY=${PORT_PROXY:-18765}
AGENTLESS_MODEL=${AGENTLESS_MODEL:-gpt-4o-2024-05-13}
DATASET=$(realpath "$DATASET"); REPOS=$(realpath "$REPOS"); AGENTLESS_SRC=$(realpath "$AGENTLESS_SRC")
mkdir -p "$WORK" && WORK=$(realpath "$WORK")
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

echo "== 1. blagent file level -> $WORK/file_level/loc_outputs.jsonl"
"$BLAGENT" batch --dataset "$DATASET" --repos "$REPOS" --ids "$IDS" --top-k 10 \
    --out "$WORK/file_level/loc_outputs.jsonl" > "$WORK/file_level_report.json"

echo "== 2. Agentless inputs, offline: dataset, repository structures, start file aligned to them"
PYTHONPATH=$ADAPTER_ROOT "$AGENTLESS_PY" -m agentless_adapter.offline dataset --dataset "$DATASET" --ids "$IDS" --work "$WORK"
PYTHONPATH=$ADAPTER_ROOT "$AGENTLESS_PY" -m agentless_adapter.offline structures --dataset "$DATASET" --ids "$IDS" \
    --repos "$REPOS" --out "$WORK/structures" --agentless-src "$AGENTLESS_SRC"
PYTHONPATH=$ADAPTER_ROOT "$AGENTLESS_PY" -m agentless_adapter.offline align \
    --start-file "$WORK/file_level/loc_outputs.jsonl" --structures "$WORK/structures" --out "$WORK/file_level/start_file.jsonl"

echo "== 3. endpoint and proxy on 127.0.0.1"
if [[ -z "${UPSTREAM:-}" ]]; then
    PYTHONPATH=$ADAPTER_ROOT "$AGENTLESS_PY" -m agentless_adapter.scripted_server --port "$PORT_UPSTREAM" \
        --log "$WORK/upstream_requests.jsonl" 2> "$WORK/upstream.log" &
    PIDS+=($!)
    UPSTREAM=http://127.0.0.1:$PORT_UPSTREAM/v1
    UPSTREAM_MODEL=${UPSTREAM_MODEL:-scripted-coder}
fi
PYTHONPATH=$ADAPTER_ROOT "$AGENTLESS_PY" -m agentless_adapter.proxy --upstream "$UPSTREAM" \
    --model "${UPSTREAM_MODEL:?the model name the endpoint serves}" --port "$PORT_PROXY" 2> "$WORK/proxy.log" &
PIDS+=($!)
for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$PORT_PROXY/v1/models" > /dev/null && break
    sleep 0.2
done

export OPENAI_BASE_URL=http://127.0.0.1:$PORT_PROXY/v1
export OPENAI_API_KEY=${OPENAI_API_KEY:-unused-by-the-proxy}
export PROJECT_FILE_LOC=$WORK/structures
export HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1
export PYTHONPATH=$AGENTLESS_SRC
cd "$WORK"

echo "== 4. Agentless related level (unmodified) on blagent's file list"
rm -rf results/related_elements
"$AGENTLESS_PY" "$AGENTLESS_SRC/agentless/fl/localize.py" --related_level \
    --output_folder results/related_elements --top_n 3 --compress_assign --compress \
    --start_file file_level/start_file.jsonl --model "$AGENTLESS_MODEL" --num_threads 1 --skip_existing

if [[ -n "${EDIT_LOCATION:-}" ]]; then
    echo "== 5. Agentless edit location on the related level's output"
    rm -rf results/edit_location_samples
    "$AGENTLESS_PY" "$AGENTLESS_SRC/agentless/fl/localize.py" --fine_grain_line_level \
        --output_folder results/edit_location_samples --top_n 3 --compress --temperature 0.8 --num_samples 2 \
        --start_file results/related_elements/loc_outputs.jsonl --model "$AGENTLESS_MODEL" --num_threads 1 --skip_existing
fi
if [[ -n "${REPAIR:-}" ]]; then
    echo "== 6. Agentless merge and repair on the edit locations"
    rm -rf results/edit_location_individual results/repair_sample_1
    "$AGENTLESS_PY" "$AGENTLESS_SRC/agentless/fl/localize.py" --merge \
        --output_folder results/edit_location_individual --top_n 3 --num_samples 2 \
        --start_file results/edit_location_samples/loc_outputs.jsonl
    "$AGENTLESS_PY" "$AGENTLESS_SRC/agentless/repair/repair.py" \
        --loc_file results/edit_location_individual/loc_merged_0-0_outputs.jsonl \
        --output_folder results/repair_sample_1 --loc_interval --top_n=3 --context_window=10 \
        --max_samples 2 --cot --diff_format --gen_and_process --num_threads 1 --model "$AGENTLESS_MODEL"
fi
echo "== done: outputs under $WORK/results"
