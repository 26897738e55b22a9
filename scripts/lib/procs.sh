# Process helpers shared by scripts/test, scripts/dev-cluster and scripts/dev-sshd (sourced).

# descendants PID: every process below PID (children first, then theirs), one pid a line.
descendants() {
    local child
    for child in $(pgrep -P "$1"); do
        echo "$child"
        descendants "$child"
    done
}
