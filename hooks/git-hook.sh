#!/bin/sh
# shiftgit @HOOK@ hook, installed by `shiftgit init --hooks git` (run it again to update this file).
# A hook that was here before shiftgit is kept as @HOOK@.pre-shiftgit and runs first, with the same
# arguments and input; when it fails, a pre-commit or commit-msg hook fails too.
# Most commits need no Python: the tests below leave early when shiftgit has nothing to do.
hook=@HOOK@
hook_diff=
python=@PYTHON@
package=@PACKAGE@  # the directory holding the shiftgit package that installed this shim
here=${0%/*}

# 1. the hook that was here before
if [ -x "$here/$hook.pre-shiftgit" ]; then
    case $hook in
        post-rewrite|pre-push)  # they read stdin: both hooks get the same lines
            input=$(cat; echo .)
            input=${input%.}
            printf '%s' "$input" | "$here/$hook.pre-shiftgit" "$@"
            status=$? ;;
        *)
            "$here/$hook.pre-shiftgit" "$@"
            status=$? ;;
    esac
    case $hook in
        pre-commit|commit-msg|pre-push) [ "$status" -eq 0 ] || exit "$status" ;;
    esac
fi

# 2. nothing to do? (git runs hooks at the top of the work tree)
[ -f .shift/config.json ] || exit 0
gitdir=${GIT_DIR:-.git}
if [ -f "$gitdir" ]; then read -r _ gitdir < "$gitdir"; fi  # a linked worktree: "gitdir: PATH"
# No active run in this worktree (most commits): no gate, no trailers. Tested here, before the longer
# blocks below, so sh reads no further.
if [ -z "$SHIFT_RUN" ] && [ ! -s "$gitdir/shift/active" ]; then
    case $hook in
        commit-msg) exit 0 ;;
        pre-commit)  # but a staged ledger is still scanned for secrets (SHIFT_SKIP: below)
            # one git process: a commit that stages no ledger stops here, and tells the post-commit
            # hook of this same `git commit` (same parent pid) so, when there is one (idle, `init` leaves
            # it out: no file rewritten, which costs more than the test on ext4, ~0.1-1 ms under load)
            if [ -z "$SHIFT_SKIP" ] && git diff --cached --quiet -- .shift/runs >/dev/null 2>&1; then
                if [ -f "$here/post-commit" ] && [ -d "$gitdir/shift" ]; then
                    { echo "$PPID" > "$gitdir/shift/no-ledger"; } 2>/dev/null
                fi
                exit 0
            fi ;;
    esac
fi
if [ "$hook" = post-commit ] && [ -z "$SHIFT_SKIP" ] && [ -s "$gitdir/shift/no-ledger" ]; then
    # the pre-commit hook of this `git commit` (same parent pid) saw no ledger staged: the commit
    # changed none (an amend's changes against the new parent are post-rewrite's)
    read -r pid < "$gitdir/shift/no-ledger"
    { : > "$gitdir/shift/no-ledger"; } 2>/dev/null
    [ "$pid" != "$PPID" ] || exit 0
fi
case $hook in
    pre-commit)
        # `init` leaves out the hooks only a run needs while none is active (shiftgit/git/install.py):
        # git looks for each hook when it runs it, so Python adds them now, before this commit needs them
        unset SHIFT_ADD_HOOKS
        for other in commit-msg post-commit; do
            line=
            { read -r _ && read -r line; } 2>/dev/null < "$here/$other"
            case $line in
                "# shiftgit $other hook, installed by"*) ;;
                *) SHIFT_ADD_HOOKS=$here; export SHIFT_ADD_HOOKS ;;
            esac
        done
        if [ -n "$SHIFT_SKIP" ] && [ -z "$SHIFT_ADD_HOOKS" ]; then
            echo "shiftgit: commit gate skipped (SHIFT_SKIP): $SHIFT_SKIP — the reason goes into this commit's note" >&2
            exit 0
        fi ;;
    post-commit|post-merge)  # a note only when the commit changed a ledger, or skipped the gate
        if [ "$hook" = post-merge ] && [ "$1" = 1 ]; then
            exit 0  # a squash merge makes no commit
        fi
        unset SHIFT_HOOK_DIFF
        if [ "$hook" = post-commit ] && [ -z "$SHIFT_SKIP" ]; then
            # the gate of this `git commit` (same parent pid) passed and left a process waiting to write
            # this commit's note (shiftgit/git/waiter.py; its pid and start time end the name): wake it,
            # await its answer
            for wait in "$gitdir/shift/wait-$PPID-"*; do
                [ -p "$wait" ] || break
                { read -r pid _ < "$gitdir/shift/trailers"; } 2>/dev/null && [ "$pid" = "$PPID" ] || break
                child=${wait##*/wait-$PPID-}
                started=${child#*-}
                child=${child%%-*}
                kill -0 "$child" 2>/dev/null || break
                # opening its FIFO would block with no one holding it: a killed child nobody reaped (a
                # zombie answers kill -0), or a process that took its pid since (another start time)
                stat=
                { read -r stat < "/proc/$child/stat"; } 2>/dev/null
                if [ -n "$stat" ]; then
                    set -f
                    set -- ${stat##*) }
                    set +f
                    case $1 in Z*|X*) break ;; esac
                    [ "${20}" = "$started" ] || break
                fi
                answer=
                { echo go >&4; read -r answer <&3; } 2>/dev/null 3<"$wait" 4<>"$gitdir/shift/go-${wait##*/wait-}"
                [ "$answer" != written ] || exit 0
                break
            done
            # ... or its gate passed and prepared the note: Python checks it against the commit's trees
            if [ -s "$gitdir/shift/handoff" ]; then
                read -r _ _ _ pid _ < "$gitdir/shift/handoff"
                [ "$pid" != "$PPID" ] || hook_diff=none
            fi
        fi
        # else the commit id and its ledger changes: Python gets them (SHIFT_HOOK_DIFF) to check a
        # prepared note against
        if [ -z "$hook_diff" ] && [ -z "$SHIFT_SKIP" ] && hook_diff=$(git diff-tree -r --root --no-renames \
                --diff-merges=first-parent HEAD -- .shift/runs 2>/dev/null); then
            [ -n "$hook_diff" ] || exit 0
            SHIFT_HOOK_DIFF=$hook_diff
            export SHIFT_HOOK_DIFF
        fi ;;
    pre-push)  # Python only when a pushed range changes a ledger or ends on an active run (or SHIFT_SKIP)
        if [ -z "${input+set}" ]; then
            input=$(cat; echo .)
            input=${input%.}
        fi
        needed=$SHIFT_SKIP
        while [ -z "$needed" ] && read -r _ local_sha _ remote_sha; do
            case $local_sha in *[!0]*) ;; *) continue ;; esac  # a deletion pushes no commit
            case $remote_sha in
                *[!0]*) if ! git cat-file -e "$remote_sha^{commit}" 2>/dev/null ||
                            ! git diff --quiet "$remote_sha" "$local_sha" -- .shift/runs 2>/dev/null; then
                            needed=1
                        fi ;;
                *) needed=1 ;;  # a new branch
            esac
            if [ -z "$needed" ] && git grep -q -E '^  "status": "active"' "$local_sha" -- \
                    '.shift/runs/*/ledger.json' 2>/dev/null; then
                needed=1
            fi
        done <<EOF
$input
EOF
        [ -n "$needed" ] || exit 0 ;;
esac

# 2b. commit-msg: the pre-commit hook of this same `git commit` (same parent pid) left the trailers
pid=
if [ "$hook" = commit-msg ] && [ -f "$gitdir/shift/trailers" ]; then
    read -r pid plain < "$gitdir/shift/trailers"
fi
if [ "$hook" = commit-msg ] && [ "$pid" = "$PPID" ]; then
    msg=$1
    { read -r _
      set --
      while IFS= read -r line; do
          [ -z "$line" ] || set -- "$@" "$line"
      done
    } < "$gitdir/shift/trailers"
    [ "$#" -gt 0 ] || exit 0
    # plain: no git config moves trailers or names another comment character (the gate asked git)
    text= simple=$plain
    while IFS= read -r line || { [ -n "$line" ] && simple=; }; do  # (a last line with no newline: not simple)
        case $line in
            "# "*">8"*) simple=; break ;;  # `commit -v`: the diff below is not part of the message
            "#"*) simple= ;;
            *[![:space:]]*)
                text=1
                case $line in [[:space:]-]*|Conflicts:*) simple= ;; esac ;;  # a divider, a conflicts list
            *) simple= ;;  # a blank line: more than one paragraph
        esac
        [ -z "$text" ] || [ -n "$simple" ] || break
    done < "$msg"
    [ -n "$text" ] || exit 0  # an empty message aborts the commit: no trailer may rescue it
    if [ -n "$simple" ]; then
        # one paragraph, every line text: git takes it for the title, never for trailers, and
        # `git interpret-trailers` would add a blank line and the trailers after it
        { echo; printf '%s\n' "$@"; } >> "$msg" && exit 0
        exit 1
    fi
    for line; do
        set -- "$@" --trailer "$line"
        shift
    done
    exec git interpret-trailers --in-place --if-exists replace "$@" "$msg"
fi

# 3. shiftgit, with the interpreter it was installed with (PYTHONPATH and the rest pass through).
# `-S`: no site start-up (two thirds of Python's start-up); shiftgit loads site itself the first time
# an import needs site-packages (jsonschema, for a ledger it never validated).
if [ -x "$python" ]; then
    set -- "$python" -S -c 'import sys
if sys.path[0] == "":  # `-c` starts in the work tree: its own shiftgit/ or json.py must not shadow ours
    del sys.path[0]
sys.path.append(sys.argv.pop(1))
try:
    from shiftgit.__main__ import hook_main
except ImportError:
    import site
    site.main()
    from shiftgit.__main__ import hook_main
sys.exit(hook_main(sys.argv[1:]))' "$package" "$hook" "$@"
elif command -v shiftgit >/dev/null 2>&1; then
    set -- shiftgit hook "$hook" "$@"
else
    echo "shiftgit: $hook hook: $python is gone and shiftgit is not on PATH; reinstall shiftgit, then run \`shiftgit init --hooks git\`" >&2
    case $hook in pre-commit|commit-msg) exit 1 ;; *) exit 0 ;; esac
fi
if [ -n "${input+set}" ]; then
    printf '%s' "$input" | "$@"
    exit $?
fi
exec "$@"
