// XML read by libxml2, a parser independent of the code that wrote it: a document that is not
// well-formed XML 1.0 is an error, never a best guess.
#pragma once

#include <libxml/parser.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nvfp4::test_support {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;  // values decoded (entities replaced)
  std::vector<XmlElement> children;               // elements only

  // The children named `n`.
  std::vector<const XmlElement*> all(const std::string& n) const {
    std::vector<const XmlElement*> r;
    for (const XmlElement& c : children)
      if (c.name == n) r.push_back(&c);
    return r;
  }
  std::string attr(const std::string& n) const { return attributes.count(n) ? attributes.at(n) : "<absent>"; }
};

namespace xml_detail {
inline XmlElement convert(const xmlNode* node) {
  XmlElement e{reinterpret_cast<const char*>(node->name), {}, {}};
  for (const xmlAttr* a = node->properties; a; a = a->next) {
    xmlChar* v = xmlNodeListGetString(node->doc, a->children, 1);
    e.attributes[reinterpret_cast<const char*>(a->name)] = v ? reinterpret_cast<const char*>(v) : "";
    xmlFree(v);
  }
  for (const xmlNode* c = node->children; c; c = c->next)
    if (c->type == XML_ELEMENT_NODE) e.children.push_back(convert(c));
  return e;
}
}  // namespace xml_detail

// The root element of `text`, or nullopt with libxml2's message in `error`.
inline std::optional<XmlElement> parse_xml(const std::string& text, std::string& error) {
  xmlDoc* doc = xmlReadMemory(text.data(), int(text.size()), "document.xml", nullptr,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (!doc) {
    const xmlError* e = xmlGetLastError();
    error = e && e->message ? e->message : "not well-formed";
    return std::nullopt;
  }
  XmlElement root = xml_detail::convert(xmlDocGetRootElement(doc));
  xmlFreeDoc(doc);
  return root;
}

}  // namespace nvfp4::test_support
