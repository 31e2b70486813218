# Bash completion for chopsim (issue 18). Installed to PREFIX/share/bash-completion/completions/chopsim by
# `cmake --install`, where bash-completion loads it on first use; from a checkout: `source scripts/completion/chopsim.bash`.
# Completes the commands, each command's options (as `chopsim --help` lists them), the values of options with a fixed
# set (--engine, --format), run config files (*.yaml) and, for `chopsim run`, the names of the shipped run configs
# found where chopsim looks for them (CHOPSIM_CONFIG_PATH, ./configs, the installed share/chopsim/configs), and the
# hardware, cluster and model names of those folders for --hardware, --cluster and --model.

# The names of the YAML files in SUBFOLDER ("" for run configs, hardware, clusters, models) of every config folder.
_chopsim_names() {
  local subfolder=$1
  local dirs=() dir
  if [[ -n ${CHOPSIM_CONFIG_PATH:-} ]]; then
    IFS=: read -r -a dirs <<< "$CHOPSIM_CONFIG_PATH"
  fi
  dirs+=("configs")
  local exe
  exe=$(command -v chopsim 2> /dev/null) && dirs+=("$(dirname "$(dirname "$exe")")/share/chopsim/configs")
  for dir in "${dirs[@]}"; do
    [[ -d $dir ]] || continue
    local file
    for file in "$dir/$subfolder"/*.yaml; do
      [[ -f $file ]] && basename "$file" .yaml
    done
  done
}

_chopsim() {
  local cur prev command
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  local commands="run sweep study report import validate describe ingest calibrate replay help"
  if [[ $COMP_CWORD -eq 1 ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$commands --help" -- "$cur")
    return
  fi
  command=${COMP_WORDS[1]}

  case $prev in
    --engine)
      mapfile -t COMPREPLY < <(compgen -W "fast simgrid" -- "$cur")
      return
      ;;
    --format)
      if [[ $command == import ]]; then
        mapfile -t COMPREPLY < <(compgen -W "nemo megatron foundry hf" -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -W "kineto rocprofv3-json rocprofv3-csv nsys-sqlite nvidia-smi dcgm-dmon amd-smi" \
          -- "$cur")
      fi
      return
      ;;
    --objective)
      mapfile -t COMPREPLY < <(compgen -W "tokens_per_s energy_per_token mfu cost_per_token time_to_train" -- "$cur")
      return
      ;;
    --out | --configs | --profiles | --data | --out-dir)
      mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      return
      ;;
    --hardware | --measured-hardware)
      mapfile -t COMPREPLY < <(compgen -W "$(_chopsim_names hardware)" -- "$cur")
      return
      ;;
    --cluster)
      mapfile -t COMPREPLY < <(compgen -W "$(_chopsim_names clusters)" -- "$cur")
      return
      ;;
    --model)
      mapfile -t COMPREPLY < <(compgen -W "$(_chopsim_names models)" -- "$cur")
      mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -X '!*.json' -- "$cur")
      return
      ;;
    -o)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
    --iterations | --jobs | --nodes | --top | --shard | --set | --timeline-ranks)
      return
      ;;
  esac

  # calibrate's --report names a file; run's, sweep's and study's is a flag.
  if [[ $prev == --report && $command == calibrate ]]; then
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return
  fi

  local options
  case $command in
    run) options="--out --iterations --configs --engine --timeline-ranks --simulate-oom --force --set --report" ;;
    sweep) options="--out --jobs --configs --shard --mpi --objective --report merge" ;;
    study) options="--out --jobs --configs --report" ;;
    report) options="-o" ;;
    import) options="--hardware --cluster --nodes --model --format -o --out-dir --strict --configs" ;;
    validate) options="--data --configs --profiles --out --jobs --engine" ;;
    ingest) options="-o --summary --format --top" ;;
    calibrate) options="--hardware -o --report --configs" ;;
    replay) options="--hardware --cluster --out --measured-hardware" ;;
    *) options="" ;;
  esac
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$options --help" -- "$cur")
    return
  fi
  case $command in
    run)
      mapfile -t COMPREPLY < <(compgen -W "$(_chopsim_names "")" -- "$cur")
      mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -X '!*.yaml' -- "$cur")
      mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -d -- "$cur")
      ;;
    sweep | study | import | report | ingest | calibrate | replay)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      ;;
  esac
}

complete -o filenames -F _chopsim chopsim
