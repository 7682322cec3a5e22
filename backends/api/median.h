// Medians of measured figures, the two ways the project's tools report them. Both sort a copy;
// an empty list gives 0.
//   MedianMean   an even count gives the mean of the middle pair (bench, calibrate: the figure a
//                statistician would call the median).
//   MedianUpper  an even count gives the upper of the middle pair, v[n/2] of the sorted list:
//                always one value that was measured (staged_probe, the registration table, the
//                FUSE bench, the fill frontier's unit times).
#ifndef RESMEM_BACKENDS_API_MEDIAN_H_
#define RESMEM_BACKENDS_API_MEDIAN_H_

#include <vector>

namespace resmem {

double MedianMean(std::vector<double> v);
double MedianUpper(std::vector<double> v);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_MEDIAN_H_
