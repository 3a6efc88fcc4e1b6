-- ccreplay.lua: Wireshark dissector for the congestion-control shims of ccreplay traces
-- (docs/wire.md section 4): the HPCC INT stack before BTH, FNCC's N + INT stack after the AETH
-- of ACKs, RCC's transmit timestamp before BTH and its cwnd/N/flags extension after the AETH.
--
-- Field names are the keys `ccreplay inspect --format json` writes (docs/inspect.md), typed and
-- displayed so that `tshark -T fields` prints the same numbers. tests/lua_dissector.rs holds the
-- two to that, packet by packet, on every bundled trace.
--
-- A trace has one dialect and the bytes do not tell which (wire.md 4): set it with the
-- preference `ccreplay.dialect` (roce, hpcc, fncc, rcc), e.g. `tshark -o ccreplay.dialect:hpcc`.
--
-- How it chains: the dissector takes UDP port 4791 over from Wireshark's InfiniBand-over-UDP
-- ("RRoCE") dissector, reads the shim in front of BTH (hpcc, rcc), hands the rest of the UDP
-- payload -- BTH onwards, ICRC included -- to that same InfiniBand dissector, and then reads the
-- ACK extension after the AETH (fncc, rcc), whose place follows from the opcode. So the
-- infiniband.* fields are right even when a shim sits before BTH, which Wireshark alone cannot
-- know. With dialect `roce` every packet goes to the InfiniBand dissector untouched.
--
-- Install: copy this file to ~/.local/lib/wireshark/plugins/ (see README.md beside it).

local VERSION = "1.0"

set_plugin_info({
    version = VERSION,
    description = "ccreplay congestion-control shims (HPCC INT, FNCC, RCC) over RoCEv2",
    repository = "contrib/wireshark in the ccreplay repository",
})

local ccreplay = Proto("ccreplay", "ccreplay congestion-control shim")

-- Dialects and INT layouts, as the manifest names them (docs/manifest.md).
local DIALECT_ROCE, DIALECT_HPCC, DIALECT_FNCC, DIALECT_RCC = 0, 1, 2, 3
local dialect_enum = {
    { 1, "roce", DIALECT_ROCE },
    { 2, "hpcc", DIALECT_HPCC },
    { 3, "fncc", DIALECT_FNCC },
    { 4, "rcc", DIALECT_RCC },
}
local LAYOUT_PADDED, LAYOUT_GROWN = 0, 1
local layout_enum = {
    { 1, "padded", LAYOUT_PADDED },
    { 2, "grown", LAYOUT_GROWN },
}

local ROCEV2_UDP_PORT = 4791
local NHOP_FIELD_MAX = 15 -- nHop is 4 bits (wire.md 4)

ccreplay.prefs.dialect = Pref.enum("Dialect", DIALECT_ROCE,
    "Which shims the capture's RoCEv2 packets carry: roce (none), hpcc (INT stack before BTH), "
        .. "fncc (N and INT stack after the AETH of ACKs), rcc (timestamp before BTH; cwnd, N, "
        .. "flags after the AETH of ACKs). The manifest's `dialect` key.",
    dialect_enum, false)
ccreplay.prefs.int_layout = Pref.enum("INT stack layout", LAYOUT_PADDED,
    "padded: always max_hops records (records past nHop are zero); grown: exactly nHop records. "
        .. "The manifest's [int] layout.",
    layout_enum, false)
ccreplay.prefs.max_hops = Pref.uint("INT max hops", 5,
    "Most records an INT stack may hold (the manifest's [int] max_hops; 1..15). "
        .. "An nHop above it is an error.")
ccreplay.prefs.udp_port = Pref.uint("RoCEv2 UDP port", ROCEV2_UDP_PORT,
    "UDP destination port of RoCEv2 packets (the manifest's network.udp_port).")

-- Line-rate codes of the INT hop record's B field (wire.md 4); 8..15 are reserved.
local line_rates = {
    [0] = "25 Gbps", [1] = "50 Gbps", [2] = "100 Gbps", [3] = "200 Gbps",
    [4] = "400 Gbps", [5] = "800 Gbps", [6] = "10 Gbps", [7] = "40 Gbps",
}

-- Fields. Every name is a key of `ccreplay inspect`; values are unsigned integers shown in
-- decimal (as inspect prints them) unless the name says otherwise.
local f = {
    int_nhop = ProtoField.uint16("ccreplay.int.nhop", "nHop", base.DEC, nil, 0xF000,
        "INT records filled (stack header bits 15..12)"),
    int_path_id = ProtoField.uint16("ccreplay.int.path_id", "pathID", base.DEC_HEX, nil, 0x0FFF,
        "XOR of the 12-bit IDs of the switches that filled a record (bits 11..0)"),
    offset_int = ProtoField.uint32("ccreplay.offset.int", "INT stack offset", base.DEC, nil, nil,
        "Byte offset of the INT stack header in the frame"),
    rcc_ts = ProtoField.uint64("ccreplay.rcc.ts", "RCC transmit timestamp (ns)", base.DEC, nil,
        nil, "Sender's (on ACKs the receiver's) transmit time, ns"),
    offset_rcc_shim = ProtoField.uint32("ccreplay.offset.rcc_shim", "RCC shim offset", base.DEC,
        nil, nil, "Byte offset of the RCC timestamp in the frame"),
    fncc_n = ProtoField.uint16("ccreplay.fncc.n", "FNCC N", base.DEC, nil, nil,
        "Receiver's count of concurrent flows (0 = unknown)"),
    offset_fncc_ext = ProtoField.uint32("ccreplay.offset.fncc_ext", "FNCC extension offset",
        base.DEC, nil, nil, "Byte offset of the FNCC ACK extension (N) in the frame"),
    rcc_cwnd = ProtoField.uint32("ccreplay.rcc.cwnd", "RCC cwnd (bytes)", base.DEC, nil, nil,
        "Window assigned by the receiver, bytes"),
    rcc_n = ProtoField.uint16("ccreplay.rcc.n", "RCC N", base.DEC, nil, nil,
        "Active messages at the receiver"),
    rcc_flags = ProtoField.uint8("ccreplay.rcc.flags", "RCC flags", base.DEC_HEX, nil, nil,
        "Bit 0 PID mode, bit 1 in-network congestion, others reserved"),
    rcc_flags_pid = ProtoField.bool("ccreplay.rcc.flags.pid", "PID mode", 8, nil, 0x01,
        "Wireshark-only: bit 0 of ccreplay.rcc.flags"),
    rcc_flags_in_network = ProtoField.bool("ccreplay.rcc.flags.in_network",
        "In-network congestion", 8, nil, 0x02, "Wireshark-only: bit 1 of ccreplay.rcc.flags"),
    rcc_reserved = ProtoField.uint8("ccreplay.rcc.reserved", "RCC reserved", base.DEC, nil, nil,
        "Reserved byte of the RCC ACK extension"),
    offset_rcc_ext = ProtoField.uint32("ccreplay.offset.rcc_ext", "RCC extension offset",
        base.DEC, nil, nil, "Byte offset of the RCC ACK extension in the frame"),
    offset_bth = ProtoField.uint32("ccreplay.offset.bth", "BTH offset", base.DEC, nil, nil,
        "Byte offset of the BTH in the frame (after the shim)"),
}

-- Hop record N: one big-endian u64, B 63..60, TS 59..36, txBytes 35..16, qLen 15..0 (wire.md 4).
-- Each field is read through a mask over the bytes it spans, so Wireshark shifts it into place.
local hop_fields = {}
for i = 0, NHOP_FIELD_MAX - 1 do
    local p = "ccreplay.int.hop" .. i
    hop_fields[i] = {
        b = ProtoField.uint8(p .. ".b", "B (line rate)", base.DEC, line_rates, 0xF0,
            "Line-rate code of the egress port (bits 63..60)"),
        ts = ProtoField.uint32(p .. ".ts", "TS (ns mod 2^24)", base.DEC, nil, 0x0FFFFFF0,
            "Egress timestamp, ns modulo 2^24 (bits 59..36)"),
        tx_bytes = ProtoField.uint24(p .. ".tx_bytes", "txBytes (128 B units mod 2^20)",
            base.DEC, nil, 0x0FFFFF, "Bytes sent by the port, 128-byte units (bits 35..16)"),
        qlen = ProtoField.uint16(p .. ".qlen", "qLen (80 B units)", base.DEC, nil, nil,
            "Egress queue length, 80-byte units (bits 15..0)"),
    }
end

local all_fields = {}
for _, v in pairs(f) do
    all_fields[#all_fields + 1] = v
end
for i = 0, NHOP_FIELD_MAX - 1 do
    for _, v in pairs(hop_fields[i]) do
        all_fields[#all_fields + 1] = v
    end
end
ccreplay.fields = all_fields

local ex = {
    nhop_too_large = ProtoExpert.new("ccreplay.expert.nhop_too_large", "INT nHop above max_hops",
        expert.group.MALFORMED, expert.severity.ERROR),
    truncated = ProtoExpert.new("ccreplay.expert.truncated", "Shim cut short",
        expert.group.MALFORMED, expert.severity.ERROR),
    reserved = ProtoExpert.new("ccreplay.expert.reserved", "Reserved value set",
        expert.group.PROTOCOL, expert.severity.WARN),
}
ccreplay.experts = { ex.nhop_too_large, ex.truncated, ex.reserved }

-- Wireshark's own dissector for UDP port 4791 (InfiniBand over UDP), to hand BTH onwards to.
local udp_table = DissectorTable.get("udp.port")
local infiniband = udp_table:get_dissector(ROCEV2_UDP_PORT) or Dissector.get("infiniband")
local data_dissector = Dissector.get("data")
-- The UDP header's own length, to tell a datagram that claims more than its IP packet holds.
local udp_length_field = Field.new("udp.length")

-- Extension header lengths before the AETH of an ACKNOWLEDGE packet: RC 0x11 has none, RD
-- 0x51 has RDETH (4): RD responses carry RDETH but no DETH (codecs/src/ib/opcode.rs). Only the
-- ACKNOWLEDGE opcodes carry the dialect extension (docs/wire.md 4, **choice**).
local ACK_HEADERS_BEFORE_AETH = { [0x11] = 0, [0x51] = 4 }
local BTH_LEN, AETH_LEN, HOP_LEN = 12, 4, 8
local RCC_SHIM_LEN, RCC_EXT_LEN = 8, 8
local ICRC_LEN = 4

-- Read an INT stack at `at` (UDP-payload offset) within `body_len` bytes. Returns its wire
-- length and nHop, or nil and the reason ("nhop", "truncated").
local function int_stack_len(tvb, at, body_len)
    if at + 2 > body_len then
        return nil, "truncated"
    end
    local nhop = tvb(at, 1):bitfield(0, 4)
    local max_hops = ccreplay.prefs.max_hops
    if nhop > max_hops then
        return nil, "nhop", nhop
    end
    local records = (ccreplay.prefs.int_layout == LAYOUT_GROWN) and nhop or max_hops
    local len = 2 + HOP_LEN * records
    if at + len > body_len then
        return nil, "truncated", nhop
    end
    return len, nil, nhop
end

-- Add an INT stack's fields (header, filled records, offset) under `tree`.
local function add_int_stack(tree, tvb, at, len, nhop)
    local frame_at = tvb:offset() + at
    local st = tree:add(ccreplay, tvb(at, len), "INT stack")
    st:set_text(string.format("INT stack: nHop %d, %d bytes", nhop, len))
    st:add(f.int_nhop, tvb(at, 2))
    st:add(f.int_path_id, tvb(at, 2))
    for i = 0, nhop - 1 do
        local r = at + 2 + HOP_LEN * i
        local hf = hop_fields[i]
        local ht = st:add(ccreplay, tvb(r, HOP_LEN), "Hop " .. i)
        ht:add(hf.b, tvb(r, 1))
        ht:add(hf.ts, tvb(r, 4))
        ht:add(hf.tx_bytes, tvb(r + 3, 3))
        ht:add(hf.qlen, tvb(r + 6, 2))
        ht:set_text(string.format("Hop %d: B %d, TS %d, txBytes %d, qLen %d", i,
            tvb(r, 1):bitfield(0, 4), tvb(r, 4):bitfield(4, 24), tvb(r + 3, 3):bitfield(4, 20),
            tvb(r + 6, 2):uint()))
    end
    -- Padding records past nHop must be zero (wire.md 4); a set byte is a warning, as in inspect.
    for p = at + 2 + HOP_LEN * nhop, at + len - 1 do
        if tvb(p, 1):uint() ~= 0 then
            st:add_proto_expert_info(ex.reserved, "INT padding record not zero")
            break
        end
    end
    st:add(f.offset_int, frame_at):set_generated()
end

-- Call Wireshark's InfiniBand dissector. An exception inside it (one of its payload heuristics,
-- e.g. RPCoRDMA, throwing on bytes that are not its protocol) is already shown as "Malformed
-- Packet" by Wireshark; catching the error here keeps it from cutting the ACK extension off.
local function call_infiniband(tvb, pinfo, tree)
    local ok, consumed = pcall(infiniband.call, infiniband, tvb, pinfo, tree)
    if ok and consumed and consumed > 0 then
        return consumed
    end
    return tvb:len()
end

local function set_info(pinfo, text)
    pinfo.cols.info:append(" [" .. text .. "]")
end

function ccreplay.dissector(tvb, pinfo, tree)
    local dialect = ccreplay.prefs.dialect
    if dialect == DIALECT_ROCE or pinfo.dst_port ~= ccreplay.prefs.udp_port then
        -- inspect reads RoCEv2 by destination port only; a reply from port 4791 is not RoCE.
        return call_infiniband(tvb, pinfo, tree)
    end
    -- The UDP payload: shims, BTH and headers, payload, pad, then the 4-byte ICRC. The shims are
    -- read from the bytes before the ICRC that were captured (a record may be cut by snaplen).
    local reported = tvb:reported_length_remaining()
    if reported < ICRC_LEN then
        return call_infiniband(tvb, pinfo, tree)
    end
    -- A UDP length beyond the IP payload: Wireshark goes on with what the IP packet holds,
    -- inspect (wire.md 2) reads no RoCE header from such a datagram; neither does this.
    local udp_lengths = { udp_length_field() }
    local udp_length = udp_lengths[#udp_lengths]
    if udp_length and udp_length.value ~= reported + 8 then
        return call_infiniband(tvb, pinfo, tree)
    end
    local body_len = math.min(reported - ICRC_LEN, tvb:len())
    local frame_base = tvb:offset()
    local sub = tree:add(ccreplay, tvb(0, math.min(body_len, tvb:len())))
    sub:set_text("ccreplay shim (" .. dialect_enum[dialect + 1][2] .. ")")

    -- 1. The shim before BTH.
    local bth_at = 0
    local info = nil -- appended to the Info column after InfiniBand has written it
    if dialect == DIALECT_HPCC then
        local len, why, nhop = int_stack_len(tvb, 0, body_len)
        if not len then
            if why == "nhop" then
                sub:add(f.int_nhop, tvb(0, 2))
                sub:add_proto_expert_info(ex.nhop_too_large, string.format(
                    "INT nHop %d above max_hops %d", nhop, ccreplay.prefs.max_hops))
            else
                sub:add_proto_expert_info(ex.truncated, "INT stack cut short")
            end
            data_dissector:call(tvb, pinfo, tree)
            return
        end
        if body_len < len + BTH_LEN then
            -- inspect reports no shim field without a whole BTH after it.
            sub:add_proto_expert_info(ex.truncated, "BTH cut short after the INT stack")
            data_dissector:call(tvb, pinfo, tree)
            return
        end
        add_int_stack(sub, tvb, 0, len, nhop)
        bth_at = len
        info = "INT nHop " .. nhop
    elseif dialect == DIALECT_RCC then
        if body_len < RCC_SHIM_LEN + BTH_LEN then
            sub:add_proto_expert_info(ex.truncated, "RCC timestamp or BTH cut short")
            data_dissector:call(tvb, pinfo, tree)
            return
        end
        sub:add(f.rcc_ts, tvb(0, RCC_SHIM_LEN))
        sub:add(f.offset_rcc_shim, frame_base):set_generated()
        bth_at = RCC_SHIM_LEN
    elseif body_len < BTH_LEN then
        return call_infiniband(tvb, pinfo, tree)
    end
    sub:add(f.offset_bth, frame_base + bth_at):set_generated()

    -- 2. BTH onwards: Wireshark's InfiniBand dissector.
    local consumed = call_infiniband(tvb(bth_at):tvb(), pinfo, tree)
    if info then
        set_info(pinfo, info)
    end

    -- 3. The extension after the AETH of ACKNOWLEDGE packets.
    local opcode = tvb(bth_at, 1):uint()
    local before = ACK_HEADERS_BEFORE_AETH[opcode]
    if before == nil or dialect == DIALECT_HPCC then
        return bth_at + consumed
    end
    local aeth_at = bth_at + BTH_LEN + before
    local at = aeth_at + AETH_LEN
    if at > body_len then
        return bth_at + consumed -- no whole AETH: inspect stops there too
    end
    if dialect == DIALECT_FNCC then
        local ext = sub:add(ccreplay, tvb(at, math.min(body_len, tvb:len()) - at), "FNCC ACK extension")
        if at + 2 > tvb:len() then
            ext:add_proto_expert_info(ex.truncated, "FNCC N cut short")
            return bth_at + consumed
        end
        if at + 2 > body_len then
            -- the two bytes are the ICRC's (or past the datagram): no N, as inspect
            ext:add_proto_expert_info(ex.truncated, "FNCC N cut short")
            return bth_at + consumed
        end
        ext:add(f.fncc_n, tvb(at, 2))
        local len, why, nhop = int_stack_len(tvb, at + 2, body_len)
        if not len then
            if why == "nhop" then
                ext:add(f.int_nhop, tvb(at + 2, 2))
                ext:add_proto_expert_info(ex.nhop_too_large, string.format(
                    "INT nHop %d above max_hops %d", nhop, ccreplay.prefs.max_hops))
            else
                ext:add_proto_expert_info(ex.truncated, "INT stack cut short")
            end
            return bth_at + consumed
        end
        ext:set_len(2 + len)
        ext:set_text(string.format("FNCC ACK extension: N %d", tvb(at, 2):uint()))
        ext:add(f.offset_fncc_ext, frame_base + at):set_generated()
        add_int_stack(ext, tvb, at + 2, len, nhop)
        set_info(pinfo, string.format("N %d, INT nHop %d", tvb(at, 2):uint(), nhop))
    else -- RCC
        if at + RCC_EXT_LEN > body_len then
            sub:add_proto_expert_info(ex.truncated, "RCC ACK extension cut short")
            return bth_at + consumed
        end
        local r = tvb(at, RCC_EXT_LEN)
        local ext = sub:add(ccreplay, r, "RCC ACK extension")
        ext:set_text(string.format("RCC ACK extension: cwnd %d, N %d, flags 0x%02x",
            r(0, 4):uint(), r(4, 2):uint(), r(6, 1):uint()))
        ext:add(f.rcc_cwnd, r(0, 4))
        ext:add(f.rcc_n, r(4, 2))
        local fl = ext:add(f.rcc_flags, r(6, 1))
        fl:add(f.rcc_flags_pid, r(6, 1))
        fl:add(f.rcc_flags_in_network, r(6, 1))
        ext:add(f.rcc_reserved, r(7, 1))
        if r(6, 1):bitfield(0, 6) ~= 0 or r(7, 1):uint() ~= 0 then
            ext:add_proto_expert_info(ex.reserved, "RCC reserved flag bits or byte set")
        end
        ext:add(f.offset_rcc_ext, frame_base + at):set_generated()
        set_info(pinfo, string.format("cwnd %d, N %d", r(0, 4):uint(), r(4, 2):uint()))
    end
    return bth_at + consumed
end

-- Take the RoCEv2 port over from the InfiniBand dissector; follow a change of the port pref.
local registered_port = ccreplay.prefs.udp_port
udp_table:add(registered_port, ccreplay)

function ccreplay.prefs_changed()
    local port = ccreplay.prefs.udp_port
    if port ~= registered_port then
        udp_table:remove(registered_port, ccreplay)
        udp_table:add(registered_port, infiniband)
        udp_table:add(port, ccreplay)
        registered_port = port
    end
end
