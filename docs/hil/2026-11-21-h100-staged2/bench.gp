set terminal pngcairo size 1400,600 noenhanced
set output 'docs/hil/2026-11-21-h100-staged2/bench.png'
set multiplot layout 1,2 title 'resmem bench (cuda): medians of passes, GB/s'
set logscale x 2
set xlabel 'block (MiB)'
set ylabel 'GB/s'
set key bottom right
set grid
set title 'host to device'
plot 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 0 using 1:2 with linespoints title 'pinned', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 1 using 1:2 with linespoints title 'registered-direct', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 2 using 1:2 with linespoints title 'registered-hugetlb', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 3 using 1:2 with linespoints title 'registered-chunked', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 4 using 1:2 with linespoints title 'staged', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 5 using 1:2 with linespoints title 'zero-copy-mapped', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 6 using 1:2 with linespoints title 'pageable'
set title 'device to host'
plot 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 7 using 1:2 with linespoints title 'pinned', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 8 using 1:2 with linespoints title 'registered-direct', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 9 using 1:2 with linespoints title 'registered-hugetlb', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 10 using 1:2 with linespoints title 'registered-chunked', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 11 using 1:2 with linespoints title 'staged', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 12 using 1:2 with linespoints title 'zero-copy-mapped', 'docs/hil/2026-11-21-h100-staged2/bench.dat' index 13 using 1:2 with linespoints title 'pageable'
unset multiplot
