# Sourced by .ci/test: quick ACKs on the IPv4 loopback while the suite runs.
#
# Why: Firefox's WebDriver BiDi server writes its replies without TCP_NODELAY, so when
# Playwright sends two commands at once (it often does: a `script.disown` beside the next
# call), the second reply waits in Nagle's algorithm for the ACK of the first, and Linux
# delays that ACK by up to 40 ms. Every locator call into the widget's iframe paid one to
# four of those: 160-230 ms instead of 25-30 ms (pw:protocol timestamps; docs/testing.md,
# "Firefox and delayed ACKs"). A route with `quickack 1` (ip-route(8)) ACKs at once; it
# changes no byte that is sent, only when the ACK goes.
#
# Needs root (or sudo without a prompt); without it the suite runs as before, slower in
# Firefox, and says so. The routes are put back as they were when .ci/test exits.

loopback_routes_before=()

loopback_quickack_on() {
    command -v ip >/dev/null 2>&1 || { say "loopback: no 'ip' command; Firefox tests run with delayed ACKs"; return 0; }
    if [ "$(id -u)" -ne 0 ] && ! { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
        say "loopback: not root; Firefox tests run with delayed ACKs (docs/testing.md)"
        return 0
    fi
    local route
    while IFS= read -r route; do
        case "$route" in
            "local 127.0.0.1 "* | "local 127.0.0.0/8 "*) ;;
            *) continue ;;
        esac
        case "$route" in *quickack*) continue ;; esac
        # shellcheck disable=SC2086  # a route's words are ip's arguments
        if as_root ip route change $route table local quickack 1 2>/dev/null; then
            loopback_routes_before+=("$route")
        fi
    done < <(ip route show table local)
    if [ "${#loopback_routes_before[@]}" -gt 0 ]; then
        say "loopback: quick ACKs for the suite (${#loopback_routes_before[@]} routes; put back on exit)"
        trap loopback_quickack_off EXIT
    fi
}

loopback_quickack_off() {
    local route
    for route in "${loopback_routes_before[@]}"; do
        # shellcheck disable=SC2086
        as_root ip route change $route table local 2>/dev/null || true
    done
    loopback_routes_before=()
}
