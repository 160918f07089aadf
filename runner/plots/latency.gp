# latency.gp: the latency percentile spectrum of both servers (HdrHistogram form):
# x = 1/(1-p) on a log axis labelled as percentiles, y = latency in ms.
# Inputs: out, candfile and basefile (x ms), xmax, plottitle, candname, basename, and
# candlg / baselg (1: that run was limited by the load generator: drawn dashed and pale,
# with '(loadgen-limited)' in its key, since its latency is the load generator's queue).
load plotsdir.'/common.gp'
set title plottitle noenhanced
set xlabel 'percentile'
set ylabel 'latency (ms)'
set logscale x
set xrange [1:xmax]
set yrange [0:*]
set xtics ('50%%' 2, '90%%' 10, '99%%' 100, '99.9%%' 1000, '99.99%%' 10000, '99.999%%' 100000)
set grid xtics ytics lc rgb '#dddddd' lt 1
if (!exists('candlg')) candlg = 0
if (!exists('baselg')) baselg = 0
cand_lc = candlg ? '#9ec5e8' : cand_color
base_lc = baselg ? '#ffc999' : base_color
cand_dt = candlg ? 2 : 1
base_dt = baselg ? 2 : 1
cand_t = candlg ? candname.' (loadgen-limited)' : candname
base_t = baselg ? basename.' (loadgen-limited)' : basename
plot candfile using 1:2 with lines lw 2 dt cand_dt lc rgb cand_lc title cand_t noenhanced, \
     basefile using 1:2 with lines lw 2 dt base_dt lc rgb base_lc title base_t noenhanced
