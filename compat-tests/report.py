"""Writes compat-tests/REPORT.md: a client x feature matrix generated from the
results the suites leave in their work/ directories (JUnit XML from Maven
Surefire, pytest and node's test runner; results.tsv from the shell suites: kcat,
the Kafka CLI tools, Kafka Connect;
franz-go's RESULTS.md counts). Never edit REPORT.md by hand: run `make compat`.

A test's features come from its name (codec names, admin, group, commit,
transaction); a cell is "pass" when every test of that client and feature
passed, "FAIL" when any failed, "gap" when the only failures are listed in
a suite's expected-failures file, and blank when no test covers it.
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
FEATURES = ["produce", "consume", "groups", "commits", "admin", "transactions",
            "none", "gzip", "snappy", "lz4", "zstd"]
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
# The TLS and SASL table's columns (the *-secure suites and franz-go's
# secured run): TLS server authentication, client certificates, each SASL
# mechanism, delegation tokens, and refusals (wrong passwords, missing
# client certificates, plaintext clients on TLS ports).
SECURITY = ["TLS", "mTLS", "SASL/PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER",
            "delegation tokens", "refusals"]


def security_of(name):
    n = name.lower().replace("-", "").replace("_", "").replace(" ", "")
    out = set()
    if "noncebug" in n:
        # An old librdkafka's SCRAM, refused as Kafka refuses it: not SCRAM support.
        return {"TLS", "refusals"}
    if "saslssl" in n or "mtls" in n or "clientcertificate" in n or "tls" in n:
        out.add("TLS")
    if "mtls" in n or "clientcertificate" in n:
        out.add("mTLS")
    if re.search(r"plain(?!text)", n):
        out.add("SASL/PLAIN")
    if "scramsha256" in n:
        out.add("SCRAM-SHA-256")
    if "scramsha512" in n or "scram" in n and "scramsha256" not in n:
        out.add("SCRAM-SHA-512")
    if "oauth" in n:
        out.add("OAUTHBEARER")
    if "token" in n:
        out.add("delegation tokens")
    if any(w in n for w in ("wrongpassword", "refused", "badcredentials", "maynot", "nolonger", "authenticationerror",
                            "authenticationfailure")):
        out.add("refusals")
    return out


def features_of(name):
    n = name.lower()
    out = set()
    codec = [c for c in CODECS if re.search(r"\b%s\b" % c, n) or f"[{c}]" in n or f"-{c}" in n or f"_{c}" in n]
    if codec:
        out.update(codec)
        out.update(["produce", "consume"])
    if "produce" in n:
        out.add("produce")
    if "consume" in n or "read back" in n:
        out.add("consume")
    if "admin" in n or "topic" in n or "cluster" in n or "-l" in n:
        out.add("admin")
    if "group" in n:
        out.update(["groups", "consume"])
    if "commit" in n or "offset" in n and "group" in n:
        out.add("commits")
    if "txn" in n or "transaction" in n or "exactly" in n:
        out.add("transactions")
    return out


def junit(path, client_of):
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')} {case.get('name', '')}"
        ok = case.find("failure") is None and case.find("error") is None
        if case.find("skipped") is not None:
            continue
        rows.append((client_of(case), name, ok))
    return rows


def collect():
    rows = []
    for sub in ("python/work/secure/junit.xml", "js/work/secure/junit.xml"):
        path = os.path.join(HERE, sub)
        if os.path.exists(path):
            rows += junit(path, lambda c: "kafkajs" if sub.startswith("js") else "confluent-kafka (librdkafka)")
    for path in glob.glob(os.path.join(HERE, "*/work/secure/results.tsv")):
        for line in open(path):
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3:
                rows.append((parts[0], parts[1], None if parts[2] == "xfail" else parts[2] == "pass"))
    for path in glob.glob(os.path.join(HERE, "java/target/surefire-reports/TEST-*.xml")):
        rows += junit(path, lambda c: "Java kafka-clients")
    for path in glob.glob(os.path.join(HERE, "streams/target/surefire-reports/TEST-*.xml")):
        rows += junit(path, lambda c: "Kafka Streams")
    py = os.path.join(HERE, "python/work/junit.xml")
    if os.path.exists(py):
        rows += junit(py, lambda c: "kafka-python" if "kafka_python" in (c.get("classname") or "") else "confluent-kafka (librdkafka)")
    js = os.path.join(HERE, "js/work/junit.xml")
    if os.path.exists(js):
        rows += junit(js, lambda c: "kafkajs")
    for tsv in glob.glob(os.path.join(HERE, "*/work/results.tsv")):
        for line in open(tsv):
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3:
                rows.append((parts[0], parts[1], None if parts[2] == "xfail" else parts[2] == "pass"))
    return rows


def franz_security():
    """Rows for franz-go's secured runs, read from RESULTS*.md: a test is
    failed when listed under Failed, not run when listed as skipped, passed
    otherwise; the whole suite over mTLS passes when nothing failed."""
    rows = []
    for name, client in (("RESULTS.md", "franz-go kgo suite"), ("RESULTS-rf3.md", "franz-go kgo suite, 3 brokers")):
        path = os.path.join(HERE, "franz-go", name)
        if not os.path.exists(path):
            continue
        text = open(path).read()
        if "KGO_SECURE=1" not in text:
            continue
        failed_part = text.split("## Failed", 1)[-1].split("##", 1)[0]
        skipped_part = text.split("## Skipped by the suite itself", 1)[-1]
        for test, label in (("TestSCRAMAuth", "TestSCRAMAuth SCRAM-SHA-512"),
                            ("TestSCRAMAuthBadCredentials", "TestSCRAMAuthBadCredentials: an unknown user is refused"),
                            ("TestOAuthAuth", "TestOAuthAuth OAUTHBEARER")):
            if re.search(r"- %s\b(?!\w)" % test, skipped_part):
                continue
            rows.append((client, label, not re.search(r"\b%s\b" % test, failed_part)))
        m = re.search(r"\| (\d+) \| (\d+) \| (\d+) \|", text)
        if m:
            rows.append((client, "whole suite over mTLS (client certificate)", m.group(2) == "0"))
    return rows


def cell_text(cell):
    """pass, FAIL, or "gap" when the only failures are listed as expected."""
    p, fl, gap = cell
    if fl:
        return "FAIL"
    if gap:
        return "gap"
    return "pass" if p else ""


def main(out):
    rows = collect()
    matrix = {}
    for client, name, ok in rows:
        for f in features_of(name):
            cell = matrix.setdefault(client, {}).setdefault(f, [0, 0, 0])
            cell[2 if ok is None else 0 if ok else 1] += 1
    lines = ["# Compatibility report", "",
             "Generated by `make compat` (compat-tests/report.py) from the suites' own results; do not edit.", "",
             "| client | " + " | ".join(FEATURES) + " |", "|---" * (len(FEATURES) + 1) + "|"]
    for client in sorted(matrix):
        cells = []
        for f in FEATURES:
            cells.append(cell_text(matrix[client].get(f, [0, 0, 0])))
        lines.append(f"| {client} | " + " | ".join(cells) + " |")
    secure_rows = [(c, n, ok) for c, n, ok in rows if "secure" in n.lower() or security_of(n) - {"TLS"} or
                   "sasl" in n.lower() or "ssl" in n.lower()]
    secure_rows += [(c, n + " SASL_SSL PLAIN", ok) for c, n, ok in rows if "SASL_SSL" in c]
    secure_rows += franz_security()
    sec = {}
    for client, name, ok in secure_rows:
        for f in security_of(name):
            cell = sec.setdefault(client, {}).setdefault(f, [0, 0, 0])
            cell[2 if ok is None else 0 if ok else 1] += 1
    if sec:
        lines += ["", "## TLS and SASL", "",
                  "The *-secure suites, franz-go's secured runs and cluster-secure, against the secured broker "
                  "(compat-tests/lib/broker.sh start_secure_broker).", "",
                  "| client | " + " | ".join(SECURITY) + " |", "|---" * (len(SECURITY) + 1) + "|"]
        for client in sorted(sec):
            cells = []
            for f in SECURITY:
                cells.append(cell_text(sec[client].get(f, [0, 0, 0])))
            lines.append(f"| {client} | " + " | ".join(cells) + " |")
    for name, what in (("RESULTS.md", "one broker"), ("RESULTS-rf3.md", "three brokers, KGO_TEST_RF=3")):
        franz = os.path.join(HERE, "franz-go", name)
        if os.path.exists(franz):
            m = re.search(r"\| (\d+) \| (\d+) \| (\d+) \|", open(franz).read())
            if m:
                lines += ["", f"franz-go kgo integration suite ({what}): {m.group(1)} passed, {m.group(2)} failed, "
                              f"{m.group(3)} skipped (details: franz-go/{name})."]
    conformance = os.path.join(HERE, "reference/work/conformance.md")
    if os.path.exists(conformance):
        # TestConformanceMatchesKafka's summary: requests, cases, divergences.
        summary = [l for l in open(conformance).read().splitlines() if "distinct (key, version, error path) cases" in l]
        if summary:
            lines += ["", "Differential conformance with Apache Kafka 4.4: " + summary[0] +
                      " (details: reference/work/conformance.md)."]
    failed = [(c, n) for c, n, ok in rows if ok is False]
    known = [(c, n) for c, n, ok in rows if ok is None]
    lines += ["", "## Failing tests", ""] + ([f"- {c}: {n}" for c, n in failed] or ["None."])
    if known:
        lines += ["", "## Known failures (listed in a suite's expected-failures file, with why)", ""]
        lines += [f"- {c}: {n}" for c, n in known]
    notes = os.path.join(HERE, "DIFFERENCES.md")
    if os.path.exists(notes):
        lines += ["", open(notes).read().strip()]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"compat report: {sum(1 for r in rows if r[2])} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "REPORT.md")))
