#!/usr/bin/env python3
# The report's section 2: medians and ranges of the staged % of pinned over the bench rounds of
# runs 2-13, per cut: "committed" (runs 9-13: the committed engine, the driving lane filling the
# first segment too), "final" (runs 3-7: the committed cut before that, or a config whose cut at
# that size is it) and "equal" (equal segments). Rounds bench marked UNRELIABLE are left out.
import re,sys,statistics,collections
# config name normalisation: final-equivalent per direction/size
rows=collections.defaultdict(list)  # (label,dir,size)->[(run,round,pct)]
for run in ['run2','run3','run4','run6','run7','run9','run10','run11','run12','run13']:
    txt=open(run+'.log').read()
    blocks=re.split(r'^== (\d) staged (.*) rc=\d+$', txt, flags=re.M)
    for i in range(1,len(blocks),3):
        rnd, cfg, body = blocks[i], blocks[i+1].strip(), blocks[i+2]
        unreliable = 'UNRELIABLE' in body
        for m in re.finditer(r'staged (H2D|D2H) (\d+[KM]iB) [\d.]+ ([\d.]+)%', body):
            d,size,pct=m.group(1),m.group(2),float(m.group(3))
            rows[(run,cfg,d,size)].append((rnd,pct,unreliable))
def label(run,cfg,d,size):
    sz=int(size[:-3])*(1 if size.endswith('MiB') else 1/1024)
    equal = ('--plan-upto 0' in cfg) or (run in('run2','run3') and cfg=='default')
    if equal: return 'equal'
    if run=='run3' and cfg=='--plan --plan-d2h':
        if d=='H2D' and sz<=64: return 'final'
        return None
    if run in ('run4','run6') and cfg=='default':
        if d=='H2D': return 'final'
        if d=='D2H' and sz>16 and sz<64: return 'final'  # equal segments there, as final
        return None
    if run=='run7' and cfg=='default': return 'final'
    # Run 6's plans from the measured costs cut D2H 64 and 256 MiB as the committed default does.
    if run=='run6' and cfg.startswith('--costs') and d=='D2H' and sz>=64: return 'final'
    # Runs 9-13: the committed engine (the driving lane fills the first segment too).
    if run in ('run9','run10','run11') and cfg=='default': return 'committed'
    if run=='run12' and cfg=='fill 49': return 'committed'
    if run=='run13' and cfg.startswith('--costs 5.8,88,49,'): return 'committed'
    return None
agg=collections.defaultdict(list)
for (run,cfg,d,size),v in rows.items():
    l=label(run,cfg,d,size)
    if not l: continue
    for rnd,pct,unrel in v:
        if unrel: continue
        agg[(l,d,size)].append((pct,f"{run}r{rnd}"))
sizes=['64KiB','256KiB','1MiB','2MiB','4MiB','8MiB','16MiB','32MiB','64MiB','256MiB']
for d in ('H2D','D2H'):
    for l in ('committed','final','equal'):
        out=[]
        for s in sizes:
            v=[p for p,_ in agg.get((l,d,s),[])]
            out.append(f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f}, n={len(v)})" if v else "-")
        print(d,l,' | '.join(f"{s}: {o}" for s,o in zip(sizes,out)))
