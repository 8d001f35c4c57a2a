/* Course website: cleaner previews under the search results (site/conf.py loads this on every page).
 *
 * Sphinx's search page shows, under each result, text taken from the page's whole `[role=main]` element:
 * with this theme that starts with the article's buttons and ends with the page's table of contents and
 * the footer, and formulas appear as raw LaTeX (MathJax typesets them only in a browser window). Here the
 * preview is taken from the article alone (without the "Download notebook" link), and every formula is
 * shown as "[formula]".
 */
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") {
    return; // not the search page
  }
  const sphinxHtmlToText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    const article = page.querySelector('[role="main"] article');
    if (!article) {
      return sphinxHtmlToText(htmlString, anchor);
    }
    article.querySelectorAll(".download-notebook, .headerlink").forEach((link) => link.remove());
    article.querySelectorAll(".math, mjx-container").forEach((formula) => {
      formula.replaceWith(page.createTextNode(" [formula] "));
    });
    const main = page.createElement("div");
    main.setAttribute("role", "main");
    main.append(article);
    return sphinxHtmlToText(main.outerHTML, anchor);
  };
});
