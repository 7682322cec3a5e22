// bench's plot (--plot FILE.png, --replot): the data and the gnuplot script that draws it, made
// as text for the command to write like its other outputs (engine/cli/output_files.h), and the
// drawing, which leaves the PNG as it was unless gnuplot made a whole new one.
#ifndef RESMEM_ENGINE_BENCH_PLOT_H_
#define RESMEM_ENGINE_BENCH_PLOT_H_

#include <string>

#include "backends/api/status.h"
#include "engine/bench/bench.h"

namespace resmem::bench {

// What a plot of `png` ("out/bench.png", or a name without .png) consists of: PREFIX.dat (one
// gnuplot data block per direction and path: "size_mib gbps" lines) and PREFIX.gp (the script
// that draws `png` from PREFIX.dat; `gnuplot PREFIX.gp` redraws it), PREFIX being `png` less a
// trailing ".png". Paths inside the script are quoted for gnuplot: any name works.
struct PlotFiles {
  std::string dat_path, dat;
  std::string gp_path, gp;
};
PlotFiles MakePlotFiles(const BenchResult& result, const std::string& png);

// PREFIX from `png`, as MakePlotFiles takes it.
std::string PlotPrefix(const std::string& png);

// `text` as a gnuplot single-quoted string: 'it''s' for it's.
std::string GnuplotQuoted(const std::string& text);

// Draws `png` with gnuplot (found on PATH) from the script MakePlotFiles made for it and the data
// it names (written first): into a new file beside `png`, renamed over it once gnuplot succeeded
// and made one, so a failure leaves an earlier PNG as it was. kUnavailable when gnuplot is not
// on PATH (the note says how to draw it later); kInternal naming gnuplot's exit and output
// otherwise. Returns "plot PNG".
Result<std::string> DrawPlot(const BenchResult& result, const std::string& png);

}  // namespace resmem::bench

#endif  // RESMEM_ENGINE_BENCH_PLOT_H_
