# latency.gp: the latency percentile spectrum of both servers (HdrHistogram form):
# x = 1/(1-p) on a log axis labelled as percentiles, y = latency in ms.
# Inputs: out, actorfile and asyncfile (x ms), xmax, plottitle, actorname, asyncname, and
# actorlg / asynclg (1: that run was limited by the load generator: drawn dashed and pale,
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
if (!exists('actorlg')) actorlg = 0
if (!exists('asynclg')) asynclg = 0
actor_lc = actorlg ? '#9ec5e8' : actor_color
async_lc = asynclg ? '#ffc999' : async_color
actor_dt = actorlg ? 2 : 1
async_dt = asynclg ? 2 : 1
actor_t = actorlg ? actorname.' (loadgen-limited)' : actorname
async_t = asynclg ? asyncname.' (loadgen-limited)' : asyncname
plot actorfile using 1:2 with lines lw 2 dt actor_dt lc rgb actor_lc title actor_t noenhanced, \
     asyncfile using 1:2 with lines lw 2 dt async_dt lc rgb async_lc title async_t noenhanced
