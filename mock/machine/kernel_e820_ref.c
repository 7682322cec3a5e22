/*
 * Independent port of Linux 6.1's mem=/memmap= handling (see kernel_e820_ref.h for the files
 * read). Written from the rules, not copied: each function names the kernel function whose
 * behaviour it reproduces.
 */
#include "mock/machine/kernel_e820_ref.h"

#include <stdlib.h>
#include <string.h>

#define KREF_TYPE_RAM 1u
#define KREF_TYPE_RESERVED 2u
#define KREF_TYPE_ACPI 3u
#define KREF_TYPE_PRAM 12u
#define KREF_TYPE_SOFT_RESERVED 0xefffffffu

struct kref_state {
	struct kref_table *table;
	int userdef;
	int bug;
};

/* lib/ctype.c: hex digits for isxdigit / _tolower. */
static int kref_lower(int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }
static int kref_digit_value(int c)
{
	c = kref_lower(c);
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	return 99;
}

/* lib/vsprintf.c simple_strtoull(s, &end, 0): the base from the prefix
 * (_parse_integer_fixup_radix: "0x" followed by a hex digit is 16, a leading 0 is 8, else 10;
 * the "0x" is skipped only for base 16), then digits of that base, wrapping modulo 2^64
 * (_parse_integer_limit flags overflow, simple_strntoull ignores the flag). *end is after the
 * last digit, or s when there is none. */
static uint64_t kref_strtoull0(const char *s, const char **end)
{
	unsigned base = 10;
	const char *p = s;
	uint64_t v = 0;
	int any = 0;

	if (p[0] == '0') {
		if (kref_lower(p[1]) == 'x' && kref_digit_value(p[2]) < 16)
			base = 16;
		else
			base = 8;
	}
	if (base == 16)
		p += 2;
	for (;; p++) {
		int d = kref_digit_value((unsigned char)*p);
		if (*p == '\0' || d >= (int)base)
			break;
		v = v * base + (uint64_t)d;
		any = 1;
	}
	*end = any ? p : s;
	return v;
}

/* lib/cmdline.c memparse: a number, then at most one of K M G T P E (either case), each a
 * further shift by 10; the suffix is consumed even when no digit came before it. */
static uint64_t kref_memparse(const char *s, const char **end)
{
	const char *p;
	uint64_t v = kref_strtoull0(s, &p);
	int shifts = 0;

	switch (*p) {
	case 'E': case 'e': shifts = 6; break;
	case 'P': case 'p': shifts = 5; break;
	case 'T': case 't': shifts = 4; break;
	case 'G': case 'g': shifts = 3; break;
	case 'M': case 'm': shifts = 2; break;
	case 'K': case 'k': shifts = 1; break;
	default: break;
	}
	if (shifts) {
		v <<= 10 * shifts;
		p++;
	}
	*end = p;
	return v;
}

/* __e820__range_add: appended as given; a full table drops it ("too many entries"). */
static void kref_add(struct kref_table *t, uint64_t start, uint64_t size, uint32_t type)
{
	if (t->nr_entries >= KREF_MAX_ENTRIES)
		return;
	t->entries[t->nr_entries].addr = start;
	t->entries[t->nr_entries].size = size;
	t->entries[t->nr_entries].type = type;
	t->nr_entries++;
}

static uint64_t kref_max(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t kref_min(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* __e820__range_update(table, start, size, old, new): the size is clamped so the end does not
 * pass 2^64 - 1; every entry of type old inside [start, end) becomes new: covered entries
 * change type, an entry strictly around the range is split in three (two entries appended),
 * a partial overlap appends the overlapping part as new and trims the entry. The table grows
 * while it is walked (the kernel's loop bound is the live count). old == new is a BUG_ON. */
static void kref_update(struct kref_state *st, uint64_t start, uint64_t size, uint32_t old_type,
                        uint32_t new_type)
{
	struct kref_table *t = st->table;
	uint64_t end;
	uint32_t i;

	if (old_type == new_type) {
		st->bug = 1;
		return;
	}
	if (size > UINT64_MAX - start)
		size = UINT64_MAX - start;
	end = start + size;
	for (i = 0; i < t->nr_entries; i++) {
		struct kref_entry *e = &t->entries[i];
		uint64_t e_end = e->addr + e->size;
		uint64_t lo, hi;

		if (e->type != old_type)
			continue;
		if (e->addr >= start && e_end <= end) {
			e->type = new_type;
			continue;
		}
		if (e->addr < start && e_end > end) {
			kref_add(t, start, size, new_type);
			kref_add(t, end, e_end - end, e->type);
			e->size = start - e->addr;
			continue;
		}
		lo = kref_max(start, e->addr);
		hi = kref_min(end, e_end);
		if (lo >= hi)
			continue;
		kref_add(t, lo, hi - lo, new_type);
		e->size -= hi - lo;
		if (e->addr < lo)
			continue;
		e->addr = hi;
	}
}

/* e820__range_remove(start, size, old, check_type): like the update, but covered entries are
 * zeroed in place (address, size and type 0: e820__update_table skips them), a range strictly
 * inside an entry appends the entry's tail, a partial overlap trims. */
static void kref_remove(struct kref_state *st, uint64_t start, uint64_t size, uint32_t old_type,
                        int check_type)
{
	struct kref_table *t = st->table;
	uint64_t end;
	uint32_t i;

	if (size > UINT64_MAX - start)
		size = UINT64_MAX - start;
	end = start + size;
	for (i = 0; i < t->nr_entries; i++) {
		struct kref_entry *e = &t->entries[i];
		uint64_t e_end = e->addr + e->size;
		uint64_t lo, hi;

		if (check_type && e->type != old_type)
			continue;
		if (e->addr >= start && e_end <= end) {
			memset(e, 0, sizeof(*e));
			continue;
		}
		if (e->addr < start && e_end > end) {
			kref_add(t, end, e_end - end, e->type);
			e->size = start - e->addr;
			continue;
		}
		lo = kref_max(start, e->addr);
		hi = kref_min(end, e_end);
		if (lo >= hi)
			continue;
		e->size -= hi - lo;
		if (e->addr < lo)
			continue;
		e->addr = hi;
	}
}

/* One change point of e820__update_table: an entry's start or end. */
struct kref_point {
	uint64_t addr;
	const struct kref_entry *entry;
	int is_end;
};

/* cpcompare: by address; at one address, starts before ends. Ties beyond that do not change
 * the result (the overlap set and its maximum type do not depend on their order). */
static int kref_point_cmp(const void *a, const void *b)
{
	const struct kref_point *p = a, *q = b;

	if (p->addr != q->addr)
		return p->addr < q->addr ? -1 : 1;
	return p->is_end - q->is_end;
}

/* e820_nomerge: PRAM and soft reserved entries are never merged with a neighbour. */
static int kref_nomerge(uint32_t type)
{
	return type == KREF_TYPE_PRAM || type == KREF_TYPE_SOFT_RESERVED;
}

/* e820__update_table: -1 (table unchanged) with fewer than two entries or an entry whose end
 * wraps past 2^64; otherwise the map rebuilt from the change points: where entries overlap the
 * highest type number wins, equal neighbours merge (not PRAM, soft reserved), empty entries go. */
static int kref_sanitize(struct kref_table *t)
{
	static struct kref_point points[2 * KREF_MAX_ENTRIES];
	static const struct kref_entry *overlap[KREF_MAX_ENTRIES];
	static struct kref_entry out[KREF_MAX_ENTRIES];
	uint32_t n = 0, nover = 0, nout = 0, i, j;
	uint32_t last_type = 0;
	uint64_t last_addr = 0;

	if (t->nr_entries < 2)
		return -1;
	for (i = 0; i < t->nr_entries; i++)
		if (t->entries[i].addr + t->entries[i].size < t->entries[i].addr)
			return -1;
	for (i = 0; i < t->nr_entries; i++) {
		const struct kref_entry *e = &t->entries[i];

		if (e->size == 0)
			continue;
		points[n].addr = e->addr;
		points[n].entry = e;
		points[n++].is_end = 0;
		points[n].addr = e->addr + e->size;
		points[n].entry = e;
		points[n++].is_end = 1;
	}
	qsort(points, n, sizeof(points[0]), kref_point_cmp);
	for (i = 0; i < n; i++) {
		uint32_t type = 0;

		if (!points[i].is_end) {
			overlap[nover++] = points[i].entry;
		} else {
			for (j = 0; j < nover; j++)
				if (overlap[j] == points[i].entry) {
					overlap[j] = overlap[nover - 1];
					break;
				}
			nover--;
		}
		for (j = 0; j < nover; j++)
			if (overlap[j]->type > type)
				type = overlap[j]->type;
		if (type == last_type && !kref_nomerge(type))
			continue;
		if (last_type) {
			out[nout].size = points[i].addr - last_addr;
			if (out[nout].size != 0 && ++nout >= KREF_MAX_ENTRIES)
				break;
		}
		if (type) {
			out[nout].addr = points[i].addr;
			out[nout].type = type;
			last_addr = points[i].addr;
		}
		last_type = type;
	}
	memcpy(t->entries, out, nout * sizeof(out[0]));
	t->nr_entries = nout;
	return 0;
}

/* parse_memopt: "nopentium" is refused on x86_64 before anything else; otherwise userdef is set
 * and a size of 0 (mem=abc, mem=0) changes nothing; else RAM above the size goes. */
static void kref_mem(struct kref_state *st, const char *val)
{
	const char *end;
	uint64_t size;

	if (!val || strcmp(val, "nopentium") == 0)
		return;
	st->userdef = 1;
	size = kref_memparse(val, &end);
	if (size == 0)
		return;
	kref_remove(st, size, UINT64_MAX - size, KREF_TYPE_RAM, 1);
}

/* parse_memmap_one: one comma-separated item. */
static void kref_memmap_one(struct kref_state *st, const char *p)
{
	const char *rest;
	uint64_t size, start;

	if (strncmp(p, "exactmap", 8) == 0) {
		st->table->nr_entries = 0;
		st->userdef = 1;
		return;
	}
	size = kref_memparse(p, &rest);
	if (rest == p)
		return;
	st->userdef = 1;
	switch (*rest) {
	case '@':
		start = kref_memparse(rest + 1, &rest);
		kref_add(st->table, start, size, KREF_TYPE_RAM);
		return;
	case '#':
		start = kref_memparse(rest + 1, &rest);
		kref_add(st->table, start, size, KREF_TYPE_ACPI);
		return;
	case '$':
		start = kref_memparse(rest + 1, &rest);
		kref_add(st->table, start, size, KREF_TYPE_RESERVED);
		return;
	case '!':
		start = kref_memparse(rest + 1, &rest);
		kref_add(st->table, start, size, KREF_TYPE_PRAM);
		return;
	case '%': {
		/* The types go through simple_strtoull into an enum e820_type (32 bits). */
		uint32_t from = 0, to = 0;

		start = kref_memparse(rest + 1, &rest);
		if (*rest == '-')
			from = (uint32_t)kref_strtoull0(rest + 1, &rest);
		if (*rest == '+')
			to = (uint32_t)kref_strtoull0(rest + 1, &rest);
		if (*rest != '\0')
			return;
		if (from && to)
			kref_update(st, start, size, from, to);
		else if (to)
			kref_add(st->table, start, size, to);
		else if (from)
			kref_remove(st, start, size, from, 1);
		else
			kref_remove(st, start, size, 0, 0);
		return;
	}
	default:
		kref_remove(st, size, UINT64_MAX - size, KREF_TYPE_RAM, 1);
		return;
	}
}

/* parse_memmap_opt: every item between commas, errors ignored. */
static void kref_memmap(struct kref_state *st, char *val)
{
	while (val && !st->bug) {
		char *comma = strchr(val, ',');

		if (comma)
			*comma++ = '\0';
		kref_memmap_one(st, val);
		val = comma;
	}
}

void kref_boot_cmdline(const struct kref_entry *firmware, uint32_t nr_firmware,
                       const char *cmdline, struct kref_boot *out)
{
	struct kref_state st;
	char *line, *p;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	st.table = &out->table;
	st.userdef = 0;
	st.bug = 0;
	/* e820__memory_setup_default: the firmware's entries appended, then sanitized (result not
	 * checked). */
	for (i = 0; i < nr_firmware; i++)
		kref_add(st.table, firmware[i].addr, firmware[i].size, firmware[i].type);
	kref_sanitize(st.table);

	/* parse_early_param -> parse_args: words split at ' ', name and value at the first '='
	 * (next_arg: not at index 0), a bare "--" ends the kernel's options. */
	line = strdup(cmdline);
	p = line;
	while (p && *p && !st.bug) {
		char *word, *eq, *val = NULL;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		word = p;
		while (*p && *p != ' ')
			p++;
		if (*p)
			*p++ = '\0';
		eq = strchr(word + 1, '=');
		if (eq) {
			*eq = '\0';
			val = eq + 1;
		}
		if (!val && strcmp(word, "--") == 0)
			break;
		if (strcmp(word, "mem") == 0)
			kref_mem(&st, val);
		else if (strcmp(word, "memmap") == 0)
			kref_memmap(&st, val);
	}
	free(line);

	out->userdef = st.userdef;
	if (st.bug) {
		out->panic = 2;
		return;
	}
	/* e820__finish_early_params: a user map that does not sanitize is early_panic. */
	if (st.userdef && kref_sanitize(st.table) < 0)
		out->panic = 1;
}
