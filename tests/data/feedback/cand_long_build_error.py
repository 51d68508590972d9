"""A candidate whose import fails as a failed load_inline build does: a RuntimeError
"Error building extension" that carries ninja's output, long enough (command line,
warnings, the one error, pages of notes) that the runner has to cut it. Nothing is
compiled."""
lines = ["[1/2] c++ -c main.cpp -o main.o" + " -isystem /usr/lib/python3/dist-packages/torch/include" * 20,
         "FAILED: main.o"]
lines += ["main.cpp:%d:11: warning: unused variable 'w%d' [-Wunused-variable]" % (20 + i, i)
          for i in range(100)]
lines.append("main.cpp:140:34: error: no matching function for call to 'max(const float&, double)'"
             "  # long_build_first_error")
lines += ["/usr/include/c++/12/bits/stl_algobase.h:%d:5: note: candidate: 'template<class _Tp> "
          "constexpr const _Tp& std::max(const _Tp&, const _Tp&)'" % (254 + i) for i in range(300)]
lines.append("ninja: build stopped: subcommand failed.")
raise RuntimeError("Error building extension 'kforge_long': " + "\n".join(lines))
