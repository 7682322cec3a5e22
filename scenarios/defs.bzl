"""One Bazel test per scenario file: `resmem run FILE` on the simulator must report every case
as reproduced, fixed or passed."""

def scenario_tests(files, backend = "sim", medium = []):
    """medium: files whose run is long enough for Bazel's medium size (300 s, not small's 60)."""
    names = []
    for f in files:
        name = f[:-len(".toml")].replace("/", "_")
        native.sh_test(
            name = name,
            size = "medium" if f in medium else "small",
            srcs = ["//ci:run_scenario_test.sh"],
            args = ["$(location //engine/cli:resmem)", "$(location %s)" % f, backend],
            data = ["//engine/cli:resmem", f],
        )
        names.append(name)
    native.test_suite(name = "all_scenarios", tests = names)
