"""fuzz_target: one libFuzzer target as a Bazel regression test.

fuzz_target(name = "x", deps = [...]) declares
  x_fuzz_lib   the target file x_fuzz.cc (LLVMFuzzerTestOneInput) with its deps; ci/fuzz.sh
               reads this library's sources (bazel query) to build the libFuzzer binary;
  x_fuzz_test  a cc_test that replays every file of corpus/x/ through the target
               (replay_main.cc), so the corpus is a regression test of `bazel test //...`.
"""

def fuzz_target(name, deps):
    native.cc_library(
        name = name + "_fuzz_lib",
        testonly = True,
        srcs = [name + "_fuzz.cc"],
        deps = deps + [":fuzz_check"],
        alwayslink = 1,
    )
    native.cc_test(
        name = name + "_fuzz_test",
        size = "small",
        args = ["engine/fuzz/corpus/" + name],
        data = native.glob(["corpus/" + name + "/*"]),
        deps = [
            ":" + name + "_fuzz_lib",
            ":replay_main",
        ],
    )
