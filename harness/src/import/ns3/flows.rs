//! `flow.txt` and `trace.txt`: the flows (with the source ports third.cc gives each host pair) and
//! the traced nodes.

use super::*;

/// One flow of `flow.txt`.
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Priority group.
    pub pg: u32,
    /// Destination UDP port.
    pub dport: u16,
    /// UDP source port the simulator gave it: 10000 + the flow's rank among the flows of its
    /// (source, destination) pair, in file order, modulo 2^16 ([`parse_flows`]).
    pub sport: u16,
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Start time, s.
    pub start_s: f64,
    /// Line of the flow file.
    pub line: u64,
}

/// Parse `flow.txt`; hosts must be hosts of `topo`.
///
/// Source ports are numbered as the simulator numbers them, per (source, destination) host
/// pair — `simulation/scratch/third.cc` of alibaba-edu/High-Precision-Congestion-Control
/// (commit 9f4be2a):
///
/// ```text
/// 118 // maintain port number for each host pair
/// 119 std::unordered_map<uint32_t, unordered_map<uint32_t, uint16_t> > portNumder;
/// 137     uint32_t port = portNumder[flow_input.src][flow_input.dst]++; // get a new port number
/// 983 // maintain port number for each host
/// 988     portNumder[i][j] = 10000; // each host pair use port number from 10000
/// ```
///
/// Line 137 runs in `ScheduleFlowInputs`, which takes the flows in file order, so the k-th flow
/// (from 0) of a pair gets 10000 + k; the counter is a `uint16_t`, so it wraps to 0 after
/// 65535 as the simulator's does. Two flows of one pair that end up with the same source port
/// (65536 flows apart) cannot be told apart in `mix.tr`: that is an error.
pub fn parse_flows(text: &str, path: &Path, topo: &Topology) -> Result<Vec<Flow>, ImportError> {
    let mut t = Toks::new(path, text);
    let n: u32 = t.parse("the flow count")?;
    let mut next_port: HashMap<(u32, u32), u16> = HashMap::new();
    let mut taken: HashMap<(u32, u32, u16), u64> = HashMap::new();
    let mut v = Vec::new();
    for _ in 0..n {
        let src: u32 = t.parse("a flow's source node")?;
        let dst: u32 = t.parse("a flow's destination node")?;
        let pg: u32 = t.parse("a flow's priority group")?;
        let dport: u16 = t.parse("a flow's destination port")?;
        let size_bytes: u64 = t.parse("a flow's size")?;
        let start_s: f64 = t.parse("a flow's start time")?;
        let line = t.line();
        for h in [src, dst] {
            if h >= topo.nodes || topo.is_switch[h as usize] {
                return Err(t.bad(line, format!("node {h} is not a host of the topology")));
            }
        }
        if !start_s.is_finite() || start_s < 0.0 {
            return Err(t.bad(line, format!("start time {start_s} s is not a time")));
        }
        let port = next_port.entry((src, dst)).or_insert(FIRST_SPORT);
        let sport = *port;
        *port = port.wrapping_add(1);
        if let Some(first) = taken.insert((src, dst, sport), line) {
            return Err(t.bad(
                line,
                format!(
                    "host {src} -> host {dst}: this flow gets UDP source port {sport} like the \
                     flow of line {first} (third.cc's 16-bit port counter of the pair wrapped), \
                     so mix.tr cannot tell their packets apart"
                ),
            ));
        }
        v.push(Flow {
            src,
            dst,
            pg,
            dport,
            sport,
            size_bytes,
            start_s,
            line,
        });
    }
    Ok(v)
}

/// Parse `trace.txt` (the traced node ids, as written: see [`traced_hosts`]).
pub fn parse_trace_list(text: &str, path: &Path) -> Result<Vec<u32>, ImportError> {
    let mut t = Toks::new(path, text);
    let n: u32 = t.parse("the node count")?;
    (0..n).map(|_| t.parse("a node id")).collect()
}

/// The hosts a trace list makes the simulator trace: its ids below the node count (third.cc
/// skips the others: `if (nid >= n.GetN()) continue;`) that are not switches, sorted.
pub fn traced_hosts(list: &[u32], topo: &Topology) -> Vec<u32> {
    let mut v: Vec<u32> = list
        .iter()
        .copied()
        .filter(|&n| n < topo.nodes && !topo.is_switch[n as usize])
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// third.cc `node_id_to_ip`: 11.x.y.1.
pub fn node_ip(id: u32) -> u32 {
    0x0b00_0001 + (id / 256) * 0x0001_0000 + (id % 256) * 0x0000_0100
}
