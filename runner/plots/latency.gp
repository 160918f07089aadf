# latency.gp: the latency percentile spectrum of both servers (HdrHistogram form):
# x = 1/(1-p) on a log axis labelled as percentiles, y = latency in ms.
# Inputs: out, actorfile and asyncfile (x ms), xmax, plottitle, actorname, asyncname.
load plotsdir.'/common.gp'
set title plottitle noenhanced
set xlabel 'percentile'
set ylabel 'latency (ms)'
set logscale x
set xrange [1:xmax]
set yrange [0:*]
set xtics ('50%%' 2, '90%%' 10, '99%%' 100, '99.9%%' 1000, '99.99%%' 10000, '99.999%%' 100000)
set grid xtics ytics lc rgb '#dddddd' lt 1
plot actorfile using 1:2 with lines lw 2 lc rgb actor_color title actorname noenhanced, \
     asyncfile using 1:2 with lines lw 2 lc rgb async_color title asyncname noenhanced
