"""fuzz_target: one libFuzzer target as a Bazel regression test, beside the parser it fuzzes.

fuzz_target(name = "x", deps = [...]) in package PKG declares
  x_fuzz_lib   the target file PKG/x_fuzz.cc (LLVMFuzzerTestOneInput) with its deps; ci/fuzz.sh
               finds it (`bazel query 'attr(name, "_fuzz_lib$", //...)'`) and reads this
               library's sources to build the libFuzzer binary;
  x_fuzz_test  a cc_test that replays every file of PKG/fuzz_corpus/x/ through the target
               (replay_main.cc), so the corpus is a regression test of `bazel test //...`.
Target names are unique across the tree: ci/fuzz.sh names binaries and --target by them.
"""

FUZZ_CORPUS = "fuzz_corpus"

def fuzz_target(name, deps):
    native.cc_library(
        name = name + "_fuzz_lib",
        testonly = True,
        srcs = [name + "_fuzz.cc"],
        deps = deps + [Label("//backends/fuzz:fuzz_check")],
        alwayslink = 1,
    )
    corpus = FUZZ_CORPUS + "/" + name
    native.cc_test(
        name = name + "_fuzz_test",
        size = "small",
        args = [native.package_name() + "/" + corpus],
        data = native.glob([corpus + "/*"]),
        deps = [
            ":" + name + "_fuzz_lib",
            Label("//backends/fuzz:replay_main"),
        ],
    )
