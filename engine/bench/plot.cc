#include "engine/bench/plot.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace resmem::bench {
namespace {

// The paths in the order their first cell comes.
std::vector<std::string> PathNames(const BenchResult& r) {
  std::vector<std::string> names;
  for (const auto& c : r.cells)
    if (std::find(names.begin(), names.end(), c.path) == names.end()) names.push_back(c.path);
  return names;
}

// The script that draws `output` from `dat_path`: two panels, one line per path.
std::string Script(const BenchResult& r, const std::string& output, const std::string& dat_path) {
  const std::vector<std::string> paths = PathNames(r);
  std::ostringstream gp;
  gp << "set terminal pngcairo size 1400,600 noenhanced\nset output " << GnuplotQuoted(output)
     << "\nset multiplot layout 1,2 title " << GnuplotQuoted("resmem bench (" + r.backend + "): medians of passes, GB/s")
     << "\nset logscale x 2\nset xlabel 'block (MiB)'\nset ylabel 'GB/s'\nset key bottom right\n"
        "set grid\n";
  for (int d = 0; d < 2; ++d) {
    gp << "set title '" << (d == 0 ? "host to device" : "device to host") << "'\nplot ";
    for (size_t i = 0; i < paths.size(); ++i)
      gp << (i ? ", " : "") << GnuplotQuoted(dat_path) << " index " << d * paths.size() + i
         << " using 1:2 with linespoints title " << GnuplotQuoted(paths[i]);
    gp << "\n";
  }
  gp << "unset multiplot\n";
  return gp.str();
}

bool GnuplotOnPath() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

// Runs gnuplot on `script` through its standard input (its messages go to this process's
// standard output).
Status RunGnuplot(const std::string& script) {
  FILE* in = popen("gnuplot 2>&1", "w");
  if (!in) return Status::Errno(errno, "cannot start gnuplot");
  const bool written = std::fwrite(script.data(), 1, script.size(), in) == script.size();
  const int rc = pclose(in);
  if (written && rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0) return Status::Ok();
  return Status::Internal("gnuplot failed (" +
                          (rc != -1 && WIFEXITED(rc) ? "exit " + std::to_string(WEXITSTATUS(rc))
                                                     : std::string("ended abnormally")) +
                          ")");
}

// A new empty file beside `png` with the mode a new file gets (mkstemp's is 0600).
Result<std::string> FileBeside(const std::string& png) {
  std::string fresh = png + ".XXXXXX";
  const int fd = mkstemp(fresh.data());
  if (fd < 0) return Status::Errno(errno, "cannot make a new file beside " + png);
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  close(fd);
  return fresh;
}

}  // namespace

std::string PlotPrefix(const std::string& png) {
  return png.size() > 4 && png.compare(png.size() - 4, 4, ".png") == 0
             ? png.substr(0, png.size() - 4)
             : png;
}

std::string GnuplotQuoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

PlotFiles MakePlotFiles(const BenchResult& r, const std::string& png) {
  PlotFiles f;
  const std::string prefix = PlotPrefix(png);
  f.dat_path = prefix + ".dat";
  f.gp_path = prefix + ".gp";
  std::ostringstream dat;
  for (const char* dir : {"H2D", "D2H"})
    for (const auto& p : PathNames(r)) {
      dat << "# " << dir << " " << p << "\n";
      for (const auto& c : r.cells)
        if (c.path == p && c.direction == dir) dat << c.size / 1048576.0 << " " << c.median_gbps << "\n";
      dat << "\n\n";
    }
  f.dat = dat.str();
  f.gp = Script(r, png, f.dat_path);
  return f;
}

Result<std::string> DrawPlot(const BenchResult& r, const std::string& png) {
  const std::string prefix = PlotPrefix(png);
  if (!GnuplotOnPath())
    return Status::Unavailable("gnuplot not found here: wrote " + prefix + ".dat and " + prefix +
                               ".gp (plot later: gnuplot " + prefix +
                               ".gp, or resmem bench --replot bench.json --plot " + png + ")");
  RESMEM_ASSIGN_OR_RETURN(const std::string fresh, FileBeside(png));
  Status st = RunGnuplot(Script(r, fresh, prefix + ".dat"));
  if (st.ok() && std::rename(fresh.c_str(), png.c_str()) != 0)
    st = Status::Errno(errno, "cannot rename " + fresh + " to " + png);
  if (!st.ok()) {
    unlink(fresh.c_str());
    return st.WithContext("drawing " + png + " from " + prefix + ".gp");
  }
  return "plot " + png;
}

}  // namespace resmem::bench
