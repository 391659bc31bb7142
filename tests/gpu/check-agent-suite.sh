#!/usr/bin/env bash
# The agent benchmark's last look on 4x H100 with the committed agent (carried as in bench-4gpu.sh, run from
# that folder): the default suite on a machine just started (the cold first run), serial mode, a
# time budget, the planted corruption on pair 2->3, three GPUs (odd: one GPU sits out each round)
# and the table output.
set -u
A=./p2pnode-agent
for args in "" "--mode serial --cases latency,integrity" "--time-budget 1" "--cases integrity --inject-corruption 2:3"; do
  python3 tests/gpu/runone.py /tmp/o.json $A $args 2>/dev/null | tr '\n' ' '
  python3 -c "
import json; d=json.load(open('/tmp/o.json'))
print('args=[$args]', 'exit', d['exit_code'], 'dur', d['duration_s'], 'mode', d['schedule']['mode'], 'bad', d['summary']['integrity_bad_bytes'], 'waived', d['summary']['cases_waived'], [c['reason'] for c in d['cases'] for c in c['cells'] if c.get('status')=='failed'][:1])"
done
python3 tests/gpu/runone.py /tmp/o3.json env CUDA_VISIBLE_DEVICES=0,1,2 $A --timings 2>/tmp/t3.txt | tr '\n' ' '
python3 -c "
import json; d=json.load(open('/tmp/o3.json'))
print('3 GPUs exit', d['exit_code'], 'dur', d['duration_s'], d['schedule'], {c['key']:(c['steps'],round(c['duration_s'],3)) for c in d['cases']})
for c in d['cases']:
  if c['key'] in ('ce_write_bandwidth','latency'): print(c['key'], c['matrices'])"
$A --format table --cases latency,host_device_bandwidth | head -30
