# report/: the report's files and the live viewer (runmodel.c, plot.c, html.c, report.c,
# viewer.c), the comparisons and their statistics (compare.c, stats.c). The unit tests
# read hand-built run directories with known records and need no torch; the browser test
# (e2e.cmake) is a real CPU run opened in headless Chromium.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
# report --csv and --svg equal the records and report --json; --html escapes; bad input
kb_add_script_test(unit_report_files
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/report_files.py
                   LABELS unit TIMEOUT 300)
# kforge view over real HTTP: every way out of the run directory refused, loopback only
kb_add_script_test(unit_viewer_paths
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/viewer_paths.py
                   LABELS unit TIMEOUT 300)
# the kernel diff (rebuilds both sides, as short as an LCS allows), escaping, CSV quoting
kb_add_test(report_text SOURCES ${CMAKE_CURRENT_LIST_DIR}/report_text.c
            LIBS kb_report LABELS unit)
# fast_p@k by hand, k-medoids recovering planted centres, the paired bootstrap's verdicts
kb_add_test(report_stats SOURCES ${CMAKE_CURRENT_LIST_DIR}/report_stats.c
            LIBS kb_report LABELS unit)
# fast_p@k by hand, report RUN_A RUN_B (common problems, noise, content warnings), subset
kb_add_script_test(unit_report_compare
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/report_compare.py
                   LABELS unit TIMEOUT 300)
# a search's views on a hand-built tree: status's nodes, depth and best node, tail's
# parents, the HTML page's tree (links, parents, verdicts, the best path), parent diffs
kb_add_script_test(unit_report_search
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/report_search.py
                   LABELS unit TIMEOUT 300)
# status's cache of the logs it read: the same words with it as without, read where it
# holds, every log read again that changed, any bad cache read as none
kb_add_script_test(unit_status_cache
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/status_cache.py
                   LABELS unit TIMEOUT 300)
