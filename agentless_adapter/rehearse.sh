#!/usr/bin/env bash
# blagent as Agentless's file-level stage (or, RELATED_LOCS=1, its related level too), then
# Agentless's own later stages (unmodified) on its output, through the model-renaming proxy, with
# no network: by default against the scripted OpenAI-compatible server; set UPSTREAM (base URL
# with /v1) and UPSTREAM_MODEL for a real endpoint (agentless_adapter/REAL_MODEL_RUN.md).
#
#   AGENTLESS_SRC=/path/to/Agentless AGENTLESS_PY=/path/to/agentless-venv/bin/python \
#   DATASET=lite.jsonl REPOS=trees IDS=id1,id2 WORK=/tmp/rehearsal agentless_adapter/rehearse.sh
#
# Optional: TIKTOKEN_CACHE_DIR (Agentless counts tokens with tiktoken, which downloads its BPE
# file once; offline, point this at a folder that holds it), EDIT_LOCATION=1 to run Agentless's
# edit-location stage too, REPAIR=1 (with EDIT_LOCATION=1) its merge and repair, NUM_SAMPLES
# (edit-location and repair samples, default 2; 1 for a slow real model), RELATED_LOCS=1 (blagent
# writes the related level itself, `batch --related-locs`, and Agentless's related level is
# skipped), INSTANCE_TIMEOUT (seconds one instance may take in one stage; exit 124 past it),
# PORT_UPSTREAM / PORT_PROXY, BLAGENT (default .venv/bin/blagent). Wall times go to
# WORK/stage_times.tsv (stage, instance or `all`, seconds, exit code), logs to WORK/logs/.
# WORK must be new, empty or one an earlier run made (it holds WORK/.blagent-rehearsal): a rerun
# replaces that run's outputs, and a folder holding anything else is refused, so that no file of
# yours (Agentless's own results, say) is removed or emptied.
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
NUM_SAMPLES=${NUM_SAMPLES:-2}
DATASET=$(realpath "$DATASET"); REPOS=$(realpath "$REPOS"); AGENTLESS_SRC=$(realpath "$AGENTLESS_SRC")
MARK=.blagent-rehearsal
if [[ -e "$WORK" || -L "$WORK" ]]; then
    [[ -d "$WORK" ]] || { echo "rehearse.sh: WORK $WORK is not a folder" >&2; exit 1; }
    if [[ ! -f "$WORK/$MARK" || -L "$WORK/$MARK" ]]; then
        first=$(find "$WORK/" -mindepth 1 -maxdepth 1 -print -quit)
        if [[ -n "$first" ]]; then
            echo "rehearse.sh: WORK $WORK holds files this script did not write ($first; no $MARK):" \
                "give a new or empty folder" >&2
            exit 1
        fi
    fi
fi
mkdir -p "$WORK" && WORK=$(realpath "$WORK")
[[ -f "$WORK/$MARK" ]] || echo "made by agentless_adapter/rehearse.sh, which replaces its outputs here" > "$WORK/$MARK"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
: > "$WORK/stage_times.tsv"
timed() { local name=$1 t0=$SECONDS; shift; "$@"; printf '%s\tall\t%s\t0\n' "$name" $((SECONDS - t0)) >> "$WORK/stage_times.tsv"; }

LEVEL="file level"; [[ -n "${RELATED_LOCS:-}" ]] && LEVEL="related level (--related-locs)"
echo "== 1. blagent $LEVEL -> $WORK/file_level/loc_outputs.jsonl"
rm -f "$WORK/file_level/loc_outputs.jsonl"
timed blagent "$BLAGENT" batch --dataset "$DATASET" --repos "$REPOS" --ids "$IDS" --top-k 10 \
    ${RELATED_LOCS:+--related-locs} --out "$WORK/file_level/loc_outputs.jsonl" > "$WORK/file_level_report.json"

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

# Agentless's model stages run once per instance (--target_id), appending to one output: an
# instance whose request fails (a real endpoint answers 400 to a prompt over its context, and
# Agentless raises on it) is recorded in stage_times.tsv with its exit code, and the others go on.
per_instance() {
    local stage=$1 id t0 rc; shift
    mkdir -p logs
    for id in ${IDS//,/ }; do
        t0=$SECONDS rc=0
        ${INSTANCE_TIMEOUT:+timeout "$INSTANCE_TIMEOUT"} "$@" --target_id "$id" > "logs/$stage.$id.log" 2>&1 || rc=$?
        printf '%s\t%s\t%s\t%s\n' "$stage" "$id" $((SECONDS - t0)) "$rc" >> "$WORK/stage_times.tsv"
        (( rc == 0 )) || echo "   $stage failed on $id (exit $rc): see $WORK/logs/$stage.$id.log"
    done
}
LOCALIZE=("$AGENTLESS_PY" "$AGENTLESS_SRC/agentless/fl/localize.py")
MODEL_ARGS=(--model "$AGENTLESS_MODEL" --num_threads 1 --skip_existing)

RELATED=results/related_elements/loc_outputs.jsonl
if [[ -n "${RELATED_LOCS:-}" ]]; then
    echo "== 4. Agentless related level skipped: blagent's found_related_locs stand in for it"
    RELATED=file_level/start_file.jsonl
else
    echo "== 4. Agentless related level (unmodified) on blagent's file list"
    rm -rf results/related_elements
    per_instance related_level "${LOCALIZE[@]}" --related_level --output_folder results/related_elements \
        --top_n 3 --compress_assign --compress --start_file file_level/start_file.jsonl "${MODEL_ARGS[@]}"
fi

if [[ -n "${EDIT_LOCATION:-}" ]]; then
    echo "== 5. Agentless edit location on $RELATED"
    rm -rf results/edit_location_samples
    per_instance edit_location "${LOCALIZE[@]}" --fine_grain_line_level --output_folder results/edit_location_samples \
        --top_n 3 --compress --temperature 0.8 --num_samples "$NUM_SAMPLES" --start_file "$RELATED" "${MODEL_ARGS[@]}"
fi
if [[ -n "${REPAIR:-}" ]]; then
    echo "== 6. Agentless merge and repair on the edit locations"
    rm -rf results/edit_location_individual results/repair_sample_1
    # One sample is already in the merged shape ({file: [locs]}); Agentless's merge expects a
    # list of samples and fails on it (TypeError: unhashable type: 'slice').
    EDIT_LOCS=results/edit_location_samples/loc_outputs.jsonl
    if (( NUM_SAMPLES > 1 )); then
        timed merge "${LOCALIZE[@]}" --merge --output_folder results/edit_location_individual --top_n 3 \
            --num_samples "$NUM_SAMPLES" --start_file "$EDIT_LOCS"
        EDIT_LOCS=results/edit_location_individual/loc_merged_0-0_outputs.jsonl
    fi
    REPAIR_ARGS=(--loc_file "$EDIT_LOCS" --output_folder results/repair_sample_1 --loc_interval --top_n=3
        --context_window=10 --max_samples "$NUM_SAMPLES" --cot --diff_format --model "$AGENTLESS_MODEL")
    # Generation per instance, then the post-processing --gen_and_process would do, once per sample
    # (it appends every instance's patch on each call).
    per_instance repair "$AGENTLESS_PY" "$AGENTLESS_SRC/agentless/repair/repair.py" "${REPAIR_ARGS[@]}" --num_threads 1
    for ((i = 0; i < NUM_SAMPLES; i++)); do
        [[ -s results/repair_sample_1/output.jsonl ]] || break  # no instance reached repair
        timed post_process "$AGENTLESS_PY" "$AGENTLESS_SRC/agentless/repair/repair.py" "${REPAIR_ARGS[@]}" \
            --post_process --select_id "$i" > "logs/post_process.$i.log" 2>&1
    done
fi
echo "== done: outputs under $WORK/results"
