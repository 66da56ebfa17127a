/*
 * lv_xml.h - libxml2 helpers shared by host/libvirt/ (internal to the module): a quiet,
 * network-free, DTD-free reader and an element serialiser.
 */
#ifndef VNUMAD_HOST_LIBVIRT_LV_XML_H
#define VNUMAD_HOST_LIBVIRT_LV_XML_H

#include <stddef.h>

#include <libxml/tree.h>

/*
 * Parse len bytes of xml (what names the document in messages, e.g. "domain XML").  Never
 * prints: libxml2's first error goes into err.  A DOCTYPE is refused (no entity expansion
 * games).  Returns the document (free with xmlFreeDoc) or NULL.
 */
xmlDoc *lv_xml_read(const char *xml, size_t len, const char *what, char *err, size_t errlen);

/*
 * node as a standalone element: a malloc'd string that declares every namespace the element
 * and its descendants use, including those declared on its ancestors.
 */
char *lv_xml_dump_element(const xmlNode *node);

#endif
